/**
 * Group-relative advantages (DESIGN §6). A group is the k rollouts of one task with one seed; each
 * episode's advantage says how much better it did than its siblings:
 * - GRPO: (r - mean) / (std + eps), population std over the group (TRL, verl);
 * - Dr. GRPO: r - mean (no std normalisation, which biases towards easy and hard groups);
 * - RLOO: r - mean of the other k-1 rewards (leave-one-out baseline), = k/(k-1) * (r - mean).
 * A group of one has no baseline: every advantage is 0.
 */
import { ValidationError } from "../core/errors.js";
import type { Advantages } from "../store/types.js";

/** The epsilon added to the std in GRPO's denominator (TRL's default 1e-4). */
export const GRPO_EPSILON = 1e-4;

/** Advantages of each reward of one group, in order. */
export function groupAdvantages(rewards: readonly number[]): Advantages[] {
  const k = rewards.length;
  if (k === 0) return [];
  for (const r of rewards) {
    if (!Number.isFinite(r)) throw new ValidationError("invalid_argument", `group rewards must be finite numbers, got ${r}`);
  }
  const mean = rewards.reduce((a, b) => a + b, 0) / k;
  const std = Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / k);
  const total = mean * k;
  return rewards.map((r) => ({
    grpo: k === 1 ? 0 : (r - mean) / (std + GRPO_EPSILON),
    dr_grpo: k === 1 ? 0 : r - mean,
    rloo: k === 1 ? 0 : r - (total - r) / (k - 1),
  }));
}

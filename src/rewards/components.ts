/**
 * Process rewards: a step's reward is the sum of named components, and every component is stored.
 * The names below are the stable, documented ones; environments may add their own.
 */
import { LlmixError } from "../core/errors.js";
import type { VerifierResult } from "./verifier.js";

/** The standard reward component names (part of the record contract: never rename one). */
export const REWARD_COMPONENTS = {
  /** The outcome: the task verifier's score. */
  task: "task",
  /** Penalty for a malformed action or a call to an unknown tool / with invalid arguments. */
  invalid_call: "invalid_call",
  /** Penalty for a call the environment's policy refused. */
  denied_call: "denied_call",
  /** Cost of a (possibly expensive) tool call. */
  tool_cost: "tool_cost",
  /** Per-step cost that rewards shorter episodes. */
  step_cost: "step_cost",
  /** Penalty for breaking a domain rule (e.g. refund without verification). */
  policy_violation: "policy_violation",
} as const;

export type StandardComponent = (typeof REWARD_COMPONENTS)[keyof typeof REWARD_COMPONENTS];

/** The standard component names in a fixed order. */
export const STANDARD_COMPONENTS: readonly StandardComponent[] = Object.values(REWARD_COMPONENTS);

/**
 * Sums reward components, rejecting non-finite values with LlmixError("invalid_argument"). Keys are
 * added in sorted order so the same components give bit-identical sums whatever their insertion order.
 */
export function sumComponents(components: Readonly<Record<string, number>>): number {
  let total = 0;
  for (const key of Object.keys(components).sort()) {
    const value = components[key];
    if (typeof value !== "number" || !Number.isFinite(value)) {
      throw new LlmixError("invalid_argument", `reward component "${key}" is not a finite number: ${String(value)}`, {
        component: key,
        value: String(value),
      });
    }
    total += value;
  }
  if (!Number.isFinite(total)) {
    throw new LlmixError("invalid_argument", "reward components overflow when summed", {});
  }
  return total;
}

/**
 * Flattens a verifier result tree into dotted keys, e.g.
 * {"outcome": 0.5, "outcome.db_state": 1, "outcome.told_customer": 0}, so every part can be stored in
 * the record. Two parts mapping to one key (a child named "a.b" next to child "a" with part "b") is
 * rejected with LlmixError("invalid_config") instead of one silently overwriting the other.
 */
export function flattenParts(result: VerifierResult, prefix: string): Record<string, number> {
  if (typeof prefix !== "string" || prefix.length === 0) {
    throw new LlmixError("invalid_argument", "flattenParts needs a non-empty prefix", {});
  }
  const out: Record<string, number> = {};
  const visit = (r: VerifierResult, key: string): void => {
    if (Object.prototype.hasOwnProperty.call(out, key)) {
      throw new LlmixError("invalid_config", `two verifier parts flatten to the same key "${key}"`, { key });
    }
    out[key] = r.score;
    for (const [child, part] of Object.entries(r.parts ?? {})) visit(part, `${key}.${child}`);
  };
  visit(result, prefix);
  return out;
}

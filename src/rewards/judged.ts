/**
 * How a judge or a reward model combines with a verified outcome (issue 18). A model's score is an
 * opinion, and a policy trained on it learns to please it: so by default it can only *lower* what was
 * verified, never turn a verified failure into a success. The ways to combine, declared by name:
 *
 * - `gate` (default): score = verified × judge; passed = both passed. A judge can take a success down
 *   (a correct refund explained rudely), never lift a failure: verified 0 stays 0.
 * - `rank`: successes are spread over [floor, 1] by the judge (floor default 0.5), failures keep their
 *   verified score, which is below the floor when the outcome is binary: the judge orders successes
 *   (useful for GRPO, where all-success groups otherwise teach nothing) and never reaches a failure.
 * - `blend`: score = (1 − w)·verified + w·judge. It *can* lift a failure — declared in the result
 *   (`can_lift_failure: true`) and reported by `llmix check` — for experiments only.
 */
import { ValidationError } from "../core/errors.js";
import { requireName } from "./config.js";
import { runVerifier, type Verifier, type VerifierResult } from "./verifier.js";

/** The declared ways to combine. */
export const JUDGE_COMBINES = ["gate", "rank", "blend"] as const;
export type JudgeCombine = (typeof JUDGE_COMBINES)[number];

/** Options of `judged`. */
export interface JudgedOptions {
  combine?: JudgeCombine;
  /** `rank`: the lowest score of a verified success (default 0.5). */
  floor?: number;
  /** `blend`: the judge's share (default 0.5). */
  weight?: number;
}

/** A verified outcome adjusted by a judge or reward model, per `combine` (see the file header). */
export function judged<I>(name: string, verified: Verifier<I>, judge: Verifier<I>, options: JudgedOptions = {}): Verifier<I> {
  requireName(name);
  const combine = options.combine ?? "gate";
  if (!(JUDGE_COMBINES as readonly string[]).includes(combine)) throw new ValidationError("invalid_config", `${name}: combine must be one of ${JUDGE_COMBINES.join(", ")}, got ${JSON.stringify(combine)}`);
  const floor = options.floor ?? 0.5;
  const weight = options.weight ?? 0.5;
  if (!(floor >= 0 && floor <= 1)) throw new ValidationError("invalid_config", `${name}: floor must be in [0, 1]`);
  if (!(weight >= 0 && weight <= 1)) throw new ValidationError("invalid_config", `${name}: weight must be in [0, 1]`);
  if (verified.name === judge.name) throw new ValidationError("invalid_config", `${name}: the verified and judge verifiers need different names`);
  return {
    name,
    async verify(input: I): Promise<VerifierResult> {
      const v = await runVerifier(verified, input);
      const j = await runVerifier(judge, input);
      let score: number;
      let passed: boolean;
      if (combine === "gate") {
        score = v.score * j.score;
        passed = v.passed && j.passed;
      } else if (combine === "rank") {
        score = v.passed ? floor + (1 - floor) * j.score : Math.min(v.score, floor);
        passed = v.passed;
      } else {
        score = (1 - weight) * v.score + weight * j.score;
        passed = score >= 0.5;
      }
      return {
        score: Math.min(1, Math.max(0, score)),
        passed,
        details: { combine, verified: verified.name, judge: judge.name, can_lift_failure: combine === "blend", ...(combine === "rank" ? { floor } : {}), ...(combine === "blend" ? { weight } : {}) },
        parts: { [verified.name]: v, [judge.name]: j },
      };
    },
  };
}

/**
 * Nodes of a verdict tree where a judged composite scored above its verified part although that part
 * failed: a judge lifting a verified failure. `llmix check` reports them.
 */
export function liftedFailures(result: VerifierResult, path: string[] = []): Array<{ path: string; verified: number; score: number; combine: string }> {
  const found: Array<{ path: string; verified: number; score: number; combine: string }> = [];
  const d = result.details as { combine?: unknown; verified?: unknown };
  if (typeof d.combine === "string" && typeof d.verified === "string") {
    const v = result.parts?.[d.verified];
    if (v && !v.passed && (result.score > v.score + 1e-12 || result.passed)) found.push({ path: path.join(" > ") || "(root)", verified: v.score, score: result.score, combine: d.combine });
  }
  for (const [name, part] of Object.entries(result.parts ?? {})) found.push(...liftedFailures(part, [...path, name]));
  return found;
}

/**
 * State-difference verification: compare the world state the episode ended in with the state the task's
 * reference solution produces. The expected state is normally built by replaying the reference solution on
 * a fresh copy of the task (the environment base provides that replay) and is then compared with the
 * episode's final snapshot, so the verifier judges what the agent did to the world, not what it said.
 */
import { LlmixError } from "../core/errors.js";
import type { JsonValue } from "../core/json.js";
import { requireName, requireThreshold } from "./config.js";
import type { Verifier, VerifierResult } from "./verifier.js";

export { diffJsonStates, normalizeJson, leafCount } from "./json-diff.js";
export type { JsonDiff, JsonDiffEntry, JsonDiffOptions, JsonCompareOptions } from "./json-diff.js";

/** What a diff function reports: equality, matched items out of total, and a JSON-safe list of differences. */
export interface StateDiffOutcome {
  equal: boolean;
  matched: number;
  total: number;
  differences: JsonValue;
}

export interface StateDiffOptions<I, S> {
  name: string;
  /** The reference state, normally the reference solution replayed on a fresh copy of the task. */
  expected: (input: I) => S | Promise<S>;
  /** The episode's final state (its snapshot). */
  actual: (input: I) => S | Promise<S>;
  /** Compares the two states; `diffJsonStates` serves for plain JSON states. */
  diff: (expected: S, actual: S) => StateDiffOutcome;
  /** Score 0 unless the states are equal, instead of partial credit matched/total. Default false. */
  allOrNothing?: boolean;
  /** Passed when score >= threshold. Default 1, i.e. passed exactly when the states are equal. */
  threshold?: number;
}

/**
 * Scores 1 when the diff says the states are equal, otherwise matched/total (0 when total is 0 or with
 * `allOrNothing`). A diff whose report is inconsistent (counts not finite, matched > total, or "not
 * equal" with everything matched) is a broken verifier and fails with verifier_failed rather than letting
 * a differing state earn full marks.
 */
export function stateDiff<I, S>(options: StateDiffOptions<I, S>): Verifier<I> {
  const name = requireName(options.name);
  const threshold = requireThreshold(options.threshold, name, 1);
  const allOrNothing = options.allOrNothing === true;
  return {
    name,
    async verify(input: I): Promise<VerifierResult> {
      // Expected first: it is usually the replay, and a failed replay should be reported before the snapshot.
      const expected = await options.expected(input);
      const actual = await options.actual(input);
      const outcome = options.diff(expected, actual);
      checkOutcome(outcome, name);
      const { equal, matched, total, differences } = outcome;
      const score = equal ? 1 : allOrNothing || total === 0 ? 0 : matched / total;
      return {
        score,
        passed: score >= threshold,
        details: { equal, matched, total, differences, all_or_nothing: allOrNothing, threshold },
      };
    },
  };
}

function checkOutcome(outcome: StateDiffOutcome, name: string): void {
  const fail = (problem: string): never => {
    throw new LlmixError("verifier_failed", `verifier "${name}": diff returned an inconsistent outcome: ${problem}`, {
      verifier: name,
      path: [name],
      reason: "invalid_result",
      problem,
    });
  };
  if (typeof outcome !== "object" || outcome === null) fail("not an object");
  if (typeof outcome.equal !== "boolean") fail("equal is not a boolean");
  const { matched, total } = outcome;
  if (typeof matched !== "number" || !Number.isFinite(matched) || matched < 0) fail(`matched is ${String(matched)}`);
  if (typeof total !== "number" || !Number.isFinite(total) || total < 0) fail(`total is ${String(total)}`);
  if (matched > total) fail(`matched ${matched} exceeds total ${total}`);
  if (!outcome.equal && total > 0 && matched === total) fail("states reported unequal but every item matched");
}

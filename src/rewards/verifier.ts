/**
 * The verifier contract: anything that scores an episode (exact checks, state diffs, judges, composites)
 * returns a score in [0, 1], a pass verdict and a JSON-safe explanation, and keeps its children's results.
 */
import { LlmixError } from "../core/errors.js";
import { canonicalJson, type JsonValue } from "../core/json.js";
import { requireName } from "./config.js";

export interface VerifierResult {
  /** Score in [0, 1]. */
  score: number;
  /** Whether the check counts as passed (usually score >= threshold). */
  passed: boolean;
  /** JSON-safe explanation: what was expected, what was found. */
  details: Record<string, JsonValue>;
  /** Results of child verifiers for composites, by name: every part is kept, never only the total. */
  parts?: Record<string, VerifierResult>;
}

export interface Verifier<Input> {
  readonly name: string;
  verify(input: Input): VerifierResult | Promise<VerifierResult>;
}

/** Builds a verifier from a name and a scoring function. */
export function defineVerifier<Input>(
  name: string,
  verify: (input: Input) => VerifierResult | Promise<VerifierResult>,
): Verifier<Input> {
  requireName(name);
  return { name, verify };
}

/**
 * Runs a verifier and guarantees a well-formed result: awaits it, checks the score is finite and in
 * [0, 1], that `passed` is a boolean and `details` JSON-safe (it goes into the trajectory record), and
 * recursively the same for `parts`. Anything thrown or malformed becomes LlmixError("verifier_failed")
 * naming the verifier; a failure inside a nested composite keeps the full path to the failing child.
 */
export async function runVerifier<Input>(v: Verifier<Input>, input: Input): Promise<VerifierResult> {
  let result: VerifierResult;
  try {
    result = await v.verify(input);
  } catch (error) {
    throw wrapFailure(v.name, error);
  }
  const problem = checkResult(result, "result");
  if (problem !== null) {
    throw new LlmixError("verifier_failed", `verifier "${v.name}" returned an invalid result: ${problem}`, {
      verifier: v.name,
      path: [v.name],
      reason: "invalid_result",
      problem,
    });
  }
  return result;
}

/** Wraps an exception thrown by `verify`; a nested verifier_failed gets this verifier prepended to its path. */
function wrapFailure(name: string, error: unknown): LlmixError {
  if (error instanceof LlmixError && error.code === "verifier_failed" && Array.isArray(error.details.path)) {
    const path = [name, ...(error.details.path as string[])];
    const wrapped = new LlmixError("verifier_failed", `verifier "${path.join(" > ")}" failed: ${innerReason(error)}`, {
      ...error.details,
      path,
    });
    wrapped.cause = error;
    return wrapped;
  }
  const message = error instanceof Error ? error.message : String(error);
  const details: Record<string, unknown> = { verifier: name, path: [name], reason: "threw", message };
  if (error instanceof LlmixError) details.cause_code = error.code;
  const wrapped = new LlmixError("verifier_failed", `verifier "${name}" threw: ${message}`, details);
  wrapped.cause = error;
  return wrapped;
}

/** The innermost failure text, so the message of a deep failure does not repeat every level. */
function innerReason(error: LlmixError): string {
  const d = error.details;
  if (d.reason === "threw") return `threw: ${String(d.message)}`;
  return `returned an invalid result: ${String(d.problem)}`;
}

/** Returns a description of what is wrong with a result, or null when it is well-formed. */
function checkResult(result: unknown, at: string): string | null {
  if (typeof result !== "object" || result === null || Array.isArray(result)) return `${at} is not an object`;
  const r = result as Record<string, unknown>;
  if (typeof r.score !== "number" || !Number.isFinite(r.score)) return `${at}.score is not a finite number (${String(r.score)})`;
  if (r.score < 0 || r.score > 1) return `${at}.score ${r.score} is outside [0, 1]`;
  if (typeof r.passed !== "boolean") return `${at}.passed is not a boolean`;
  if (typeof r.details !== "object" || r.details === null || Array.isArray(r.details)) return `${at}.details is not an object`;
  try {
    canonicalJson(r.details);
  } catch (error) {
    return `${at}.details is not JSON-safe (${(error as Error).message})`;
  }
  if (r.parts !== undefined) {
    if (typeof r.parts !== "object" || r.parts === null || Array.isArray(r.parts)) return `${at}.parts is not an object`;
    for (const [key, part] of Object.entries(r.parts as Record<string, unknown>)) {
      const problem = checkResult(part, `${at}.parts.${key}`);
      if (problem !== null) return problem;
    }
  }
  return null;
}

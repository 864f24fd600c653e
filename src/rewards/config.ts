/**
 * Construction-time checks shared by the verifier builders. A bad configuration is a programming error
 * in the environment, so it fails loudly when the verifier is built, not silently at scoring time.
 * Internal: not re-exported from the package index.
 */
import { LlmixError } from "../core/errors.js";

/** Rejects an empty or non-string verifier name (names key `parts` and reward records). */
export function requireName(name: unknown, what = "verifier"): string {
  if (typeof name !== "string" || name.length === 0) {
    throw new LlmixError("invalid_config", `${what} name must be a non-empty string`, { name: String(name) });
  }
  return name;
}

/** Rejects a pass threshold outside [0, 1]; returns the default when none is given. */
export function requireThreshold(threshold: unknown, name: string, fallback: number): number {
  if (threshold === undefined) return fallback;
  if (typeof threshold !== "number" || !Number.isFinite(threshold) || threshold < 0 || threshold > 1) {
    throw new LlmixError("invalid_config", `verifier "${name}": threshold must be a number in [0, 1]`, {
      verifier: name,
      threshold: String(threshold),
    });
  }
  return threshold;
}

/** Rejects a negative, NaN or infinite tolerance. */
export function requireTolerance(value: unknown, field: string, name: string): number {
  if (value === undefined) return 0;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new LlmixError("invalid_config", `verifier "${name}": ${field} must be a finite number >= 0`, {
      verifier: name,
      [field]: String(value),
    });
  }
  return value;
}

/** Rejects duplicate child names: `parts` is keyed by name, so a duplicate would hide a result. */
export function requireUniqueNames(names: readonly string[], composite: string): void {
  const seen = new Set<string>();
  for (const n of names) {
    if (seen.has(n)) {
      throw new LlmixError("invalid_config", `composite "${composite}": duplicate child name "${n}"`, {
        verifier: composite,
        duplicate: n,
      });
    }
    seen.add(n);
  }
}

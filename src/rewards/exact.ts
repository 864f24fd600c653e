/**
 * Exact programmatic checks: each is built from an `expected` value and a `select(input)` that extracts
 * the actual value from whatever the verifier is given (final answer, snapshot, trajectory). A missing or
 * malformed actual value is the agent's failure and scores 0; only a bad configuration or a throwing
 * `select` is an error.
 */
import { LlmixError } from "../core/errors.js";
import { canonicalJson, type JsonValue } from "../core/json.js";
import { requireName, requireThreshold, requireTolerance } from "./config.js";
import { diffJsonStates, normalizeJson, type JsonCompareOptions } from "./json-diff.js";
import { normalizeString, type StringNormalization } from "./normalize-string.js";
import { parseNumber, type ParseNumberOptions } from "./parse-number.js";
import type { Verifier, VerifierResult } from "./verifier.js";

/** A value that may appear in details; non-JSON values are described rather than embedded. */
function describe(value: unknown): JsonValue {
  if (value === undefined) return null;
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  try {
    return normalizeJson(value);
  } catch {
    return `<${typeof value}>`;
  }
}

function binary(ok: boolean, details: Record<string, JsonValue>): VerifierResult {
  return { score: ok ? 1 : 0, passed: ok, details };
}

function normalizationDetails(n: StringNormalization): Record<string, JsonValue> {
  return {
    trim: n.trim !== false,
    collapse_whitespace: n.collapseWhitespace === true,
    case_insensitive: n.caseInsensitive === true,
    strip_punctuation: n.stripPunctuation === true,
    nfkc: n.nfkc === true,
  };
}

// ---------------------------------------------------------------------------------------------------

export interface ExactStringOptions<I> {
  name: string;
  /** The expected answer, or several accepted alternatives (any one matching scores 1). */
  expected: string | readonly string[];
  select: (input: I) => string | null | undefined;
  /** Applied to both sides before comparing. Default: trim only. */
  normalize?: StringNormalization;
}

/** Scores 1 when the selected string equals the expected one (or an alternative) after normalization. */
export function exactString<I>(options: ExactStringOptions<I>): Verifier<I> {
  const name = requireName(options.name);
  const alternatives = typeof options.expected === "string" ? [options.expected] : [...options.expected];
  if (alternatives.length === 0 || alternatives.some((a) => typeof a !== "string")) {
    throw new LlmixError("invalid_config", `verifier "${name}": expected must be a string or a non-empty list of strings`, {
      verifier: name,
    });
  }
  const norm = options.normalize ?? {};
  const normalizedExpected = alternatives.map((a) => normalizeString(a, norm));
  return {
    name,
    verify(input: I): VerifierResult {
      const found: unknown = options.select(input);
      const details: Record<string, JsonValue> = {
        expected: typeof options.expected === "string" ? options.expected : alternatives,
        found: describe(found),
        normalized_expected: normalizedExpected,
        normalization: normalizationDetails(norm),
      };
      if (typeof found !== "string") {
        details.normalized_found = null;
        details.reason = found === null || found === undefined ? "no value found" : `found a ${typeof found}, not a string`;
        return binary(false, details);
      }
      const normalizedFound = normalizeString(found, norm);
      const index = normalizedExpected.indexOf(normalizedFound);
      details.normalized_found = normalizedFound;
      details.matched_alternative = index >= 0 ? alternatives[index] : null;
      return binary(index >= 0, details);
    },
  };
}

// ---------------------------------------------------------------------------------------------------

export interface NumberWithinOptions<I> {
  name: string;
  expected: number;
  /** A number, or a numeric string parsed with `parseNumber` (see its grammar). */
  select: (input: I) => number | string | null | undefined;
  /** Allowed absolute difference. Default 0. */
  absTolerance?: number;
  /** Allowed difference relative to |expected|. Default 0. */
  relTolerance?: number;
  /** How numeric strings are parsed (trailing `%`). */
  parse?: ParseNumberOptions;
}

/**
 * Scores 1 when |actual − expected| <= max(absTolerance, relTolerance·|expected|). The bound is
 * inclusive and gets a few ulps of slack, so a decimal boundary such as 1.1 vs 1.0 with tolerance 0.1
 * passes as written despite binary rounding, and 0.1 + 0.2 matches 0.3 with zero tolerance.
 */
export function numberWithin<I>(options: NumberWithinOptions<I>): Verifier<I> {
  const name = requireName(options.name);
  const expected = options.expected;
  if (typeof expected !== "number" || !Number.isFinite(expected)) {
    throw new LlmixError("invalid_config", `verifier "${name}": expected must be a finite number`, {
      verifier: name,
      expected: String(expected),
    });
  }
  const abs = requireTolerance(options.absTolerance, "absTolerance", name);
  const rel = requireTolerance(options.relTolerance, "relTolerance", name);
  const tolerance = Math.max(abs, rel * Math.abs(expected));
  return {
    name,
    verify(input: I): VerifierResult {
      const found: unknown = options.select(input);
      const details: Record<string, JsonValue> = {
        expected,
        found: describe(found),
        abs_tolerance: abs,
        rel_tolerance: rel,
        tolerance,
      };
      let actual: number | null = null;
      if (typeof found === "number") actual = Number.isFinite(found) ? found : null;
      else if (typeof found === "string") actual = parseNumber(found, options.parse);
      details.parsed = actual;
      if (actual === null) {
        details.reason =
          found === null || found === undefined
            ? "no value found"
            : typeof found === "number"
              ? "found a non-finite number"
              : typeof found === "string"
                ? "found text that is not a number"
                : `found a ${typeof found}, not a number`;
        return binary(false, details);
      }
      const difference = Math.abs(actual - expected);
      const slack = 4 * Number.EPSILON * Math.max(Math.abs(actual), Math.abs(expected));
      details.difference = Number.isFinite(difference) ? difference : String(difference);
      return binary(difference <= tolerance + slack, details);
    },
  };
}

// ---------------------------------------------------------------------------------------------------

export interface JsonEqualsOptions<I> extends JsonCompareOptions {
  name: string;
  expected: JsonValue;
  select: (input: I) => unknown;
  /** How many differing paths details list (default 20). */
  maxDifferences?: number;
}

/**
 * Scores 1 when the selected value is structurally equal to `expected` (canonical JSON after dropping
 * `ignoreKeys` at every depth and, with `unorderedArrays`, sorting every array). A value JSON cannot
 * carry (NaN, a function, undefined) scores 0.
 */
export function jsonEquals<I>(options: JsonEqualsOptions<I>): Verifier<I> {
  const name = requireName(options.name);
  const compare: JsonCompareOptions = { ignoreKeys: options.ignoreKeys, unorderedArrays: options.unorderedArrays };
  let expected: JsonValue;
  try {
    expected = normalizeJson(options.expected, compare);
  } catch (error) {
    throw new LlmixError("invalid_config", `verifier "${name}": expected is not JSON (${(error as Error).message})`, {
      verifier: name,
    });
  }
  const expectedBytes = canonicalJson(expected);
  return {
    name,
    verify(input: I): VerifierResult {
      const found: unknown = options.select(input);
      let actual: JsonValue;
      try {
        actual = normalizeJson(found, compare);
      } catch (error) {
        return binary(false, {
          expected,
          found: describe(found),
          reason: `found value is not JSON (${(error as Error).message})`,
        });
      }
      const equal = canonicalJson(actual) === expectedBytes;
      const details: Record<string, JsonValue> = { expected, found: actual };
      if (!equal) {
        details.differences = diffJsonStates(expected, actual, { maxDifferences: options.maxDifferences ?? 20 }).differences;
      }
      return binary(equal, details);
    },
  };
}

// ---------------------------------------------------------------------------------------------------

export interface SetMatchOptions<I> {
  name: string;
  expected: Iterable<string>;
  /** The actual items; null/undefined is the empty set. Duplicates count once. */
  select: (input: I) => Iterable<string> | null | undefined;
  /** Applied to every item of both sides before matching. Default: trim only. */
  normalize?: StringNormalization;
  /** Which measure is the score. Default "f1". */
  score?: "f1" | "recall" | "precision";
  /** Passed when score >= threshold. Default 1. */
  threshold?: number;
}

/**
 * Precision / recall / F1 over sets of strings (e.g. affected hosts named in an incident report).
 * Conventions: both sets empty → all three are 1; an empty actual set against a non-empty expected set
 * has precision 0 (an empty answer must not earn full precision); an empty expected set against a
 * non-empty answer has recall 1 and precision 0. Details list the missing and extra items.
 */
export function setMatch<I>(options: SetMatchOptions<I>): Verifier<I> {
  const name = requireName(options.name);
  const measure = options.score ?? "f1";
  if (measure !== "f1" && measure !== "recall" && measure !== "precision") {
    throw new LlmixError("invalid_config", `verifier "${name}": score must be "f1", "recall" or "precision"`, {
      verifier: name,
      score: String(measure),
    });
  }
  const threshold = requireThreshold(options.threshold, name, 1);
  const norm = options.normalize ?? {};
  const rawExpected = [...options.expected];
  if (rawExpected.some((e) => typeof e !== "string")) {
    throw new LlmixError("invalid_config", `verifier "${name}": expected must contain only strings`, { verifier: name });
  }
  const expected = new Set(rawExpected.map((e) => normalizeString(e, norm)));
  const expectedSorted = [...expected].sort();
  return {
    name,
    verify(input: I): VerifierResult {
      const found: unknown = options.select(input);
      let items: unknown[];
      if (found === null || found === undefined) items = [];
      else if (typeof found === "string" || typeof (found as Iterable<unknown>)[Symbol.iterator] !== "function") {
        // A bare string is iterable by characters; treating it as a set of letters would be nonsense.
        return { score: 0, passed: threshold === 0, details: { expected: expectedSorted, found: describe(found), reason: "found value is not a list of strings" } };
      } else items = [...(found as Iterable<unknown>)];
      const bad = items.findIndex((x) => typeof x !== "string");
      if (bad >= 0) {
        return {
          score: 0,
          passed: threshold === 0,
          details: { expected: expectedSorted, found: describe(items), reason: `found item ${bad} is not a string` },
        };
      }
      const actual = new Set((items as string[]).map((x) => normalizeString(x, norm)));
      const missing = expectedSorted.filter((e) => !actual.has(e));
      const extra = [...actual].filter((a) => !expected.has(a)).sort();
      const tp = expected.size - missing.length;
      const precision = actual.size === 0 ? (expected.size === 0 ? 1 : 0) : tp / actual.size;
      const recall = expected.size === 0 ? 1 : tp / expected.size;
      const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
      const score = measure === "f1" ? f1 : measure === "recall" ? recall : precision;
      return {
        score,
        passed: score >= threshold,
        details: {
          expected: expectedSorted,
          found: [...actual].sort(),
          missing,
          extra,
          true_positives: tp,
          precision,
          recall,
          f1,
          measure,
          threshold,
        },
      };
    },
  };
}

/**
 * Composition of verifiers into an outcome reward. Every composite runs its children through
 * `runVerifier` (so a broken child fails loudly, named by its path) and keeps every child's result in
 * `parts`: the record shows each component, never only the total. Children run one after another in the
 * given order, because verifiers may share a sandbox and a fixed order keeps scoring deterministic.
 */
import { LlmixError } from "../core/errors.js";
import type { JsonValue } from "../core/json.js";
import { requireName, requireThreshold, requireUniqueNames } from "./config.js";
import { runVerifier, type Verifier, type VerifierResult } from "./verifier.js";

export interface CompositeOptions {
  /** Passed when score >= threshold. Default: passed when every child that was run passed. */
  threshold?: number;
}

export interface WeightedPart<I> {
  verifier: Verifier<I>;
  /** Relative weight; must be finite and > 0. Weights are normalized to sum to 1. */
  weight: number;
}

function requireChildren<I>(name: string, verifiers: readonly Verifier<I>[]): void {
  if (!Array.isArray(verifiers) || verifiers.length === 0) {
    throw new LlmixError("invalid_config", `composite "${name}" needs at least one child verifier`, { verifier: name });
  }
  for (const v of verifiers) {
    if (typeof v !== "object" || v === null || typeof v.verify !== "function") {
      throw new LlmixError("invalid_config", `composite "${name}": a child is not a verifier`, { verifier: name });
    }
    requireName(v.name, `child of "${name}": verifier`);
  }
  requireUniqueNames(
    verifiers.map((v) => v.name),
    name,
  );
}

async function runAll<I>(verifiers: readonly Verifier<I>[], input: I): Promise<Record<string, VerifierResult>> {
  const parts: Record<string, VerifierResult> = {};
  for (const v of verifiers) parts[v.name] = await runVerifier(v, input);
  return parts;
}

function verdict(score: number, parts: Record<string, VerifierResult>, threshold: number | undefined): boolean {
  return threshold === undefined ? Object.values(parts).every((p) => p.passed) : score >= threshold;
}

/** Score = Σ wᵢ·sᵢ / Σ wᵢ over the children; details give normalized weights and contributions. */
export function weightedSum<I>(name: string, items: readonly WeightedPart<I>[], options: CompositeOptions = {}): Verifier<I> {
  requireName(name);
  if (!Array.isArray(items) || items.length === 0) {
    throw new LlmixError("invalid_config", `composite "${name}" needs at least one weighted child`, { verifier: name });
  }
  for (const item of items) {
    const w = item?.weight;
    if (typeof w !== "number" || !Number.isFinite(w) || w <= 0) {
      throw new LlmixError("invalid_config", `composite "${name}": weight of "${String(item?.verifier?.name)}" must be a finite number > 0`, {
        verifier: name,
        child: String(item?.verifier?.name),
        weight: String(w),
      });
    }
  }
  const verifiers = items.map((i) => i.verifier);
  requireChildren(name, verifiers);
  const threshold = options.threshold === undefined ? undefined : requireThreshold(options.threshold, name, 1);
  const sum = items.reduce((acc, i) => acc + i.weight, 0);
  if (!Number.isFinite(sum)) {
    throw new LlmixError("invalid_config", `composite "${name}": weights overflow`, { verifier: name });
  }
  const weights = items.map((i) => i.weight / sum);
  return {
    name,
    async verify(input: I): Promise<VerifierResult> {
      const parts = await runAll(verifiers, input);
      const normalized: Record<string, JsonValue> = {};
      const contributions: Record<string, JsonValue> = {};
      let score = 0;
      verifiers.forEach((v, i) => {
        const c = weights[i] * parts[v.name].score;
        normalized[v.name] = weights[i];
        contributions[v.name] = c;
        score += c;
      });
      // Normalized weights can sum to 1 + a rounding error; keep the score inside [0, 1].
      score = Math.min(1, Math.max(0, score));
      return { score, passed: verdict(score, parts, threshold), details: { weights: normalized, contributions }, parts };
    },
  };
}

export interface GateOptions extends CompositeOptions {
  /**
   * Run the inner verifier even when the gate fails, so its score is still recorded (useful for
   * reward-hacking analysis). Default true; set false to skip an expensive inner check.
   */
  alwaysRunInner?: boolean;
}

/** Score = inner score when the gate passes, else 0 (e.g. "no policy violation" gating task success). */
export function gate<I>(name: string, gateVerifier: Verifier<I>, inner: Verifier<I>, options: GateOptions = {}): Verifier<I> {
  requireName(name);
  requireChildren(name, [gateVerifier, inner]);
  const threshold = options.threshold === undefined ? undefined : requireThreshold(options.threshold, name, 1);
  const alwaysRunInner = options.alwaysRunInner !== false;
  return {
    name,
    async verify(input: I): Promise<VerifierResult> {
      const parts: Record<string, VerifierResult> = {};
      parts[gateVerifier.name] = await runVerifier(gateVerifier, input);
      const open = parts[gateVerifier.name].passed;
      if (open || alwaysRunInner) parts[inner.name] = await runVerifier(inner, input);
      const score = open ? parts[inner.name].score : 0;
      const passed = threshold === undefined ? open && parts[inner.name].passed : score >= threshold;
      return {
        score,
        passed,
        details: { gate: gateVerifier.name, gate_passed: open, inner: inner.name, inner_run: inner.name in parts },
        parts,
      };
    },
  };
}

/** Score = product of the children's scores: any zero zeroes the whole. */
export function product<I>(name: string, verifiers: readonly Verifier<I>[], options: CompositeOptions = {}): Verifier<I> {
  return combineAll(name, verifiers, options, (children, parts) => ({
    score: children.reduce((acc, v) => acc * parts[v.name].score, 1),
    details: { rule: "product" },
  }));
}

/** Score = the lowest child score; details name the weakest child. */
export function min<I>(name: string, verifiers: readonly Verifier<I>[], options: CompositeOptions = {}): Verifier<I> {
  return combineAll(name, verifiers, options, (children, parts) => {
    let weakest = children[0].name;
    for (const v of children) if (parts[v.name].score < parts[weakest].score) weakest = v.name;
    return { score: parts[weakest].score, details: { rule: "min", weakest } };
  });
}

/** A composite that runs every child in order, then combines their results into one score. */
function combineAll<I>(
  name: string,
  verifiers: readonly Verifier<I>[],
  options: CompositeOptions,
  combine: (children: readonly Verifier<I>[], parts: Record<string, VerifierResult>) => { score: number; details: Record<string, JsonValue> },
): Verifier<I> {
  requireName(name);
  requireChildren(name, verifiers);
  const threshold = options.threshold === undefined ? undefined : requireThreshold(options.threshold, name, 1);
  const children = [...verifiers];
  return {
    name,
    async verify(input: I): Promise<VerifierResult> {
      const parts = await runAll(children, input);
      const { score, details } = combine(children, parts);
      return { score, passed: verdict(score, parts, threshold), details, parts };
    },
  };
}

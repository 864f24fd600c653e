/**
 * Calibration of a judge or learned reward model against verified outcomes: how well its scores rank
 * successes above failures (AUROC, Spearman), how well they match success rates (ECE, Brier), and where
 * it pays for failures (length and position bias, hacking candidates). Pure math on plain items; the
 * drawings live in reliability-diagram.ts.
 *
 * An item counts as a success when `outcome >= 1`. Spearman against the outcome uses the raw outcome
 * (partial credit carries rank information); every other metric uses the binary success label.
 */
import { ValidationError } from "../core/errors.js";

export interface CalibrationItem {
  id: string;
  /** The judge's or reward model's score in [0, 1]. */
  score: number;
  /** The verified outcome in [0, 1]; >= 1 means success. */
  outcome: number;
  /** Trajectory length (steps or tokens), >= 0. */
  length: number;
  /** Where the answer appears, as a fraction 0..1 of the trajectory. */
  answer_position?: number;
  /** E.g. the task family; hacking candidates are grouped by it. */
  group?: string;
}

export interface CalibrationOptions {
  /** Score at or above which the judge predicts success (default 0.5). */
  threshold?: number;
  /** Number of equal-width score bins for ECE and the reliability diagram (default 10). */
  bins?: number;
}

/** One equal-width score bin; `mean_score` and `success_rate` are null when the bin is empty. */
export interface CalibrationBin {
  lo: number;
  hi: number;
  count: number;
  mean_score: number | null;
  success_rate: number | null;
}

export interface Confusion {
  tp: number;
  fp: number;
  tn: number;
  fn: number;
  /** Null when nothing is predicted positive. */
  precision: number | null;
  /** Null when there are no positives. */
  recall: number | null;
  accuracy: number;
}

export interface HackingGroup {
  /** The items' `group`, null for items without one. */
  group: string | null;
  count: number;
  /** At most 20 ids, highest scores first. */
  ids: string[];
}

export interface CalibrationReport {
  n: number;
  positives: number;
  threshold: number;
  /** Null when every item is a success or every item a failure. */
  auroc: number | null;
  /** Spearman of score vs outcome; null when either is constant. */
  spearman: number | null;
  ece: number;
  bins: CalibrationBin[];
  brier: number;
  confusion: Confusion;
  length_bias: { overall: number | null; failures: number | null; n_failures: number };
  /** Null when no item gives an answer_position; otherwise computed over the items that do. */
  position_bias: { n: number; spearman: number | null } | null;
  /** Failures scored at or above the threshold: where a policy could learn to please the judge. */
  hacking_candidates: { total: number; groups: HackingGroup[] };
}

const MAX_IDS_PER_GROUP = 20;
const MAX_BINS = 1000;

/** Scores a judge or reward model against verified outcomes; throws ValidationError on bad input. */
export function calibrationReport(items: readonly CalibrationItem[], options: CalibrationOptions = {}): CalibrationReport {
  const threshold = options.threshold ?? 0.5;
  const binCount = options.bins ?? 10;
  if (!isUnit(threshold)) invalid(`threshold must be a finite number in [0, 1], got ${String(threshold)}`, { field: "threshold" });
  if (!Number.isInteger(binCount) || binCount < 1 || binCount > MAX_BINS) {
    invalid(`bins must be an integer in [1, ${MAX_BINS}], got ${String(binCount)}`, { field: "bins" });
  }
  validateItems(items);

  const scores = items.map((i) => i.score);
  const labels = items.map((i) => (i.outcome >= 1 ? 1 : 0));
  const positives = labels.reduce<number>((a, b) => a + b, 0);
  const bins = binItems(scores, labels, binCount);
  const ece = bins.reduce((sum, b) => (b.count === 0 ? sum : sum + (b.count / items.length) * Math.abs(b.mean_score! - b.success_rate!)), 0);
  const brier = mean(scores.map((s, k) => (s - labels[k]) ** 2));

  const failures = items.filter((i) => i.outcome < 1);
  const positioned = items.filter((i) => i.answer_position !== undefined);

  return {
    n: items.length,
    positives,
    threshold,
    auroc: auroc(scores, labels),
    spearman: spearman(scores, items.map((i) => i.outcome)),
    ece,
    bins,
    brier,
    confusion: confusion(scores, labels, threshold),
    length_bias: {
      overall: spearman(scores, items.map((i) => i.length)),
      failures: spearman(failures.map((i) => i.score), failures.map((i) => i.length)),
      n_failures: failures.length,
    },
    position_bias:
      positioned.length === 0
        ? null
        : { n: positioned.length, spearman: spearman(positioned.map((i) => i.score), positioned.map((i) => i.answer_position!)) },
    hacking_candidates: hackingCandidates(failures.filter((i) => i.score >= threshold)),
  };
}

/** Exact AUROC (Mann-Whitney U with ties counted half); null when one class is empty. Labels are 0/1. */
export function auroc(scores: readonly number[], labels: readonly number[]): number | null {
  const ranks = averageRanks(scores);
  let pos = 0;
  let rankSum = 0;
  labels.forEach((label, k) => {
    if (label === 1) {
      pos += 1;
      rankSum += ranks[k];
    }
  });
  const neg = labels.length - pos;
  if (pos === 0 || neg === 0) return null;
  return (rankSum - (pos * (pos + 1)) / 2) / (pos * neg);
}

/** Spearman rank correlation with average ranks for ties; null for fewer than 2 points or a constant side. */
export function spearman(x: readonly number[], y: readonly number[]): number | null {
  if (x.length !== y.length) throw new RangeError("spearman: x and y differ in length");
  if (x.length < 2) return null;
  return pearson(averageRanks(x), averageRanks(y));
}

/** 1-based ranks; tied values share the mean of the ranks they span. */
function averageRanks(values: readonly number[]): number[] {
  const order = values.map((_, k) => k).sort((a, b) => values[a] - values[b]);
  const ranks = new Array<number>(values.length);
  for (let start = 0; start < order.length; ) {
    let end = start;
    while (end + 1 < order.length && values[order[end + 1]] === values[order[start]]) end += 1;
    const rank = (start + end) / 2 + 1;
    for (let k = start; k <= end; k += 1) ranks[order[k]] = rank;
    start = end + 1;
  }
  return ranks;
}

function pearson(x: readonly number[], y: readonly number[]): number | null {
  const mx = mean(x);
  const my = mean(y);
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let k = 0; k < x.length; k += 1) {
    sxy += (x[k] - mx) * (y[k] - my);
    sxx += (x[k] - mx) ** 2;
    syy += (y[k] - my) ** 2;
  }
  if (sxx === 0 || syy === 0) return null;
  // Clamp: rounding can push a perfect correlation a hair past ±1.
  return Math.max(-1, Math.min(1, sxy / Math.sqrt(sxx * syy)));
}

function binItems(scores: readonly number[], labels: readonly number[], count: number): CalibrationBin[] {
  const sums = Array.from({ length: count }, () => ({ n: 0, score: 0, success: 0 }));
  scores.forEach((s, k) => {
    // The epsilon keeps bin edges like 0.57 * 100 = 56.999… in the bin they name; 1.0 joins the last bin.
    const b = Math.min(count - 1, Math.floor(s * count + 1e-9));
    sums[b].n += 1;
    sums[b].score += s;
    sums[b].success += labels[k];
  });
  return sums.map((b, k) => ({
    lo: k / count,
    hi: (k + 1) / count,
    count: b.n,
    mean_score: b.n === 0 ? null : b.score / b.n,
    success_rate: b.n === 0 ? null : b.success / b.n,
  }));
}

function confusion(scores: readonly number[], labels: readonly number[], threshold: number): Confusion {
  let tp = 0;
  let fp = 0;
  let tn = 0;
  let fn = 0;
  scores.forEach((s, k) => {
    const predicted = s >= threshold;
    if (predicted && labels[k] === 1) tp += 1;
    else if (predicted) fp += 1;
    else if (labels[k] === 1) fn += 1;
    else tn += 1;
  });
  return {
    tp,
    fp,
    tn,
    fn,
    precision: tp + fp === 0 ? null : tp / (tp + fp),
    recall: tp + fn === 0 ? null : tp / (tp + fn),
    accuracy: (tp + tn) / scores.length,
  };
}

function hackingCandidates(candidates: readonly CalibrationItem[]): CalibrationReport["hacking_candidates"] {
  // Id as tie-break so equal scores list in a stable, input-order-independent way.
  const sorted = [...candidates].sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const byGroup = new Map<string | null, CalibrationItem[]>();
  for (const item of sorted) {
    const key = item.group ?? null;
    const list = byGroup.get(key) ?? [];
    list.push(item);
    byGroup.set(key, list);
  }
  const groups = [...byGroup].map(([group, list]) => ({
    group,
    count: list.length,
    ids: list.slice(0, MAX_IDS_PER_GROUP).map((i) => i.id),
  }));
  // Largest groups first; then by name, with the ungrouped last.
  groups.sort((a, b) => b.count - a.count || compareGroup(a.group, b.group));
  return { total: sorted.length, groups };
}

function compareGroup(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? -1 : 1;
}

function validateItems(items: readonly CalibrationItem[]): void {
  if (!Array.isArray(items)) invalid("items must be an array", { field: "items" });
  if (items.length === 0) invalid("calibration needs at least one item", { field: "items" });
  const seen = new Set<string>();
  items.forEach((item, index) => {
    if (typeof item !== "object" || item === null) invalid(`item ${index} is not an object`, { index });
    const { id } = item;
    if (typeof id !== "string" || id.length === 0) invalid(`item ${index}: id must be a non-empty string`, { index, field: "id" });
    // Ids name the hacking candidates; a duplicate would make that list ambiguous.
    if (seen.has(id)) invalid(`item "${id}": duplicate id`, { id, field: "id" });
    seen.add(id);
    const field = (name: string, ok: boolean, want: string, value: unknown) => {
      if (!ok) invalid(`item "${id}": ${name} must be ${want}, got ${String(value)}`, { id, field: name, value: String(value) });
    };
    field("score", isUnit(item.score), "a finite number in [0, 1]", item.score);
    field("outcome", isUnit(item.outcome), "a finite number in [0, 1]", item.outcome);
    field("length", typeof item.length === "number" && Number.isFinite(item.length) && item.length >= 0, "a finite number >= 0", item.length);
    if (item.answer_position !== undefined) {
      field("answer_position", isUnit(item.answer_position), "a finite number in [0, 1]", item.answer_position);
    }
    if (item.group !== undefined) field("group", typeof item.group === "string", "a string", item.group);
  });
}

function isUnit(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 && value <= 1;
}

function mean(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

function invalid(message: string, details: Record<string, unknown>): never {
  throw new ValidationError("invalid_argument", message, details);
}

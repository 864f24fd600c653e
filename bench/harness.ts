/**
 * A small benchmark harness: each case runs in batches, each batch long enough to time reliably, and
 * reports the median time per operation over the batches. Cases are compared as ratios against a
 * baseline measured in the same run, never against fixed thresholds (the machines are shared and noisy).
 */

export interface Measurement {
  name: string;
  /** Median nanoseconds per operation over the batches. */
  median_ns: number;
  /** Fastest and slowest batch, per operation. */
  min_ns: number;
  max_ns: number;
  batches: number;
  ops_per_batch: number;
}

/** Time `fn` (sync or async): calibrate a batch size near `targetMs`, then take the median of `batches` batches. */
export async function measure(name: string, fn: () => unknown, options: { batches?: number; targetMs?: number } = {}): Promise<Measurement> {
  const batches = options.batches ?? 15;
  const targetNs = (options.targetMs ?? 40) * 1e6;
  let ops = 1;
  // Calibrate: double the batch until it takes at least a tenth of the target.
  for (;;) {
    const t = await timeBatch(fn, ops);
    if (t >= targetNs / 10 || ops >= 1 << 24) {
      ops = Math.max(1, Math.round((ops * targetNs) / Math.max(t, 1)));
      break;
    }
    ops *= 2;
  }
  // Warm up for a while: V8 needs many calls before it settles on optimized code.
  for (let spent = 0; spent < 300e6; ) spent += await timeBatch(fn, ops);
  const perOp: number[] = [];
  for (let i = 0; i < batches; i++) perOp.push((await timeBatch(fn, ops)) / ops);
  perOp.sort((a, b) => a - b);
  return {
    name,
    median_ns: round(perOp[Math.floor(perOp.length / 2)] as number),
    min_ns: round(perOp[0] as number),
    max_ns: round(perOp[perOp.length - 1] as number),
    batches,
    ops_per_batch: ops,
  };
}

async function timeBatch(fn: () => unknown, ops: number): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < ops; i++) {
    const r = fn();
    if (r instanceof Promise) await r;
  }
  return Number(process.hrtime.bigint() - start);
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}

/** The q-quantile (0..1) of ascending `sorted` values (nearest rank, as p50/p99 are quoted everywhere here). */
export function percentile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

/** p50 and p99 of unsorted samples in nanoseconds, in `unit` nanoseconds (1e3: µs, 1e6: ms), rounded to `digits`. */
export function p50p99(samplesNs: readonly number[], unit: number, digits: number): { p50: number; p99: number; samples: number } {
  const sorted = [...samplesNs].sort((a, b) => a - b);
  const at = (q: number) => Math.round((percentile(sorted, q) / unit) * 10 ** digits) / 10 ** digits;
  return { p50: at(0.5), p99: at(0.99), samples: sorted.length };
}

/** Time one call of `fn` on its own: [nanoseconds, its value]. */
export async function timeOnce<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const start = process.hrtime.bigint();
  const value = await fn();
  return [Number(process.hrtime.bigint() - start), value];
}

/** The median of unsorted values. */
export function median(values: readonly number[]): number {
  return percentile([...values].sort((a, b) => a - b), 0.5);
}

/** Human-readable duration. */
export function formatNs(ns: number): string {
  if (ns < 1e3) return `${ns.toFixed(1)} ns`;
  if (ns < 1e6) return `${(ns / 1e3).toFixed(2)} µs`;
  return `${(ns / 1e6).toFixed(2)} ms`;
}

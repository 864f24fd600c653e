import { createHash } from "node:crypto";
import { ValidationError } from "./errors.js";

/**
 * The seeded, splittable PRNG every environment draws from (DESIGN §2).
 *
 * xoshiro128** 1.0 (Blackman & Vigna) over four 32-bit words, seeded through SplitMix64. It is written
 * here by hand, so no library upgrade can ever change an episode. Streams are addressed by keys:
 * `Rng.fromKey("billing-dispute", taskId, seed)` and `rng.fork("faults")` give independent streams that
 * depend only on their key, never on how many numbers another stream has drawn.
 */

const MASK64 = (1n << 64n) - 1n;
const GOLDEN_GAMMA = 0x9e3779b97f4a7c15n;

/** SplitMix64 (Steele, Lea & Flood): used to expand a 64-bit seed into xoshiro state. */
export class SplitMix64 {
  private x: bigint;

  constructor(seed: bigint) {
    this.x = BigInt.asUintN(64, seed);
  }

  /** Next 64-bit output as an unsigned bigint. */
  next(): bigint {
    this.x = (this.x + GOLDEN_GAMMA) & MASK64;
    let z = this.x;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
    return z ^ (z >> 31n);
  }
}

/** Serializable RNG state: the stream key and the four xoshiro words. */
export interface RngState {
  key: string;
  s: [number, number, number, number];
}

/** Seeded xoshiro128** generator with named sub-streams. */
export class Rng {
  // State as int32 words: V8 keeps them unboxed; outputs are converted to uint32 with >>> 0.
  private readonly s = new Int32Array(4);
  /** The key this stream was derived from; forks extend it. */
  readonly key: string;

  /** Build from raw xoshiro state. Prefer `fromKey` / `fromSeed`. */
  constructor(state: readonly [number, number, number, number], key = "") {
    if ((state[0] | state[1] | state[2] | state[3]) === 0) {
      throw new ValidationError("invalid_argument", "xoshiro128** state must not be all zero");
    }
    this.s.set(state.map((w) => w | 0));
    this.key = key;
  }

  /** A generator seeded from a 64-bit integer through SplitMix64. */
  static fromSeed(seed: bigint | number, key = `seed:${seed}`): Rng {
    const sm = new SplitMix64(BigInt(seed));
    const a = sm.next();
    const b = sm.next();
    return new Rng(
      [Number(a & 0xffffffffn), Number(a >> 32n), Number(b & 0xffffffffn), Number(b >> 32n)],
      key,
    );
  }

  /** A generator whose stream depends only on the key parts, e.g. (env, taskId, seed). */
  static fromKey(...parts: ReadonlyArray<string | number>): Rng {
    const key = parts.map((p) => String(p)).join("\u241f");
    const digest = createHash("sha256").update(key).digest();
    return Rng.fromSeed(digest.readBigUInt64LE(0), key);
  }

  /** Restore a generator from `state()`. */
  static fromState(state: RngState): Rng {
    const ok =
      state !== null &&
      typeof state === "object" &&
      typeof state.key === "string" &&
      Array.isArray(state.s) &&
      state.s.length === 4 &&
      state.s.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffffffff);
    if (!ok) throw new ValidationError("invalid_snapshot", "RNG state must be {key: string, s: four uint32}");
    if (state.s.every((w) => w === 0)) throw new ValidationError("invalid_snapshot", "RNG state must not be all zero");
    return new Rng(state.s, state.key);
  }

  /** The named child stream `label`: independent of this stream's position. */
  fork(label: string): Rng {
    return Rng.fromKey(this.key, label);
  }

  /** A child stream seeded from this stream's next 64 bits (advances this stream). */
  split(): Rng {
    const hi = BigInt(this.nextUint32());
    const lo = BigInt(this.nextUint32());
    return Rng.fromSeed((hi << 32n) | lo, `${this.key}/split`);
  }

  /** Current state, for snapshots (words as uint32). */
  state(): RngState {
    const s = this.s;
    return { key: this.key, s: [s[0]! >>> 0, s[1]! >>> 0, s[2]! >>> 0, s[3]! >>> 0] };
  }

  /** Next uniform 32-bit unsigned integer (the xoshiro128** output). */
  nextUint32(): number {
    const s = this.s;
    const s1 = s[1]!;
    const x = Math.imul(s1, 5);
    const result = Math.imul((x << 7) | (x >>> 25), 9) >>> 0;
    const t = s1 << 9;
    s[2]! ^= s[0]!;
    s[3]! ^= s1;
    s[1] = s1 ^ s[2]!;
    s[0]! ^= s[3]!;
    s[2]! ^= t;
    const s3 = s[3]!;
    s[3] = (s3 << 11) | (s3 >>> 21);
    return result;
  }

  /** Uniform float in [0, 1) with 53 bits of precision. */
  float(): number {
    const hi = this.nextUint32() >>> 5; // 27 bits
    const lo = this.nextUint32() >>> 6; // 26 bits
    return (hi * 67108864 + lo) / 9007199254740992;
  }

  /** Uniform integer in [min, max] (inclusive), without modulo bias. */
  int(min: number, max: number): number {
    if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || max < min) {
      throw new ValidationError("invalid_argument", `rng.int needs integers min <= max, got ${min}, ${max}`);
    }
    const span = max - min + 1;
    if (span <= 0x100000000) {
      // Rejection sampling: accept only the largest multiple of span below 2^32.
      const limit = 0x100000000 - (0x100000000 % span);
      let x = this.nextUint32();
      while (x >= limit) x = this.nextUint32();
      return min + (x % span);
    }
    return min + Math.floor(this.float() * span);
  }

  /** True with probability p. */
  bool(p = 0.5): boolean {
    return this.float() < p;
  }

  /** One element chosen uniformly. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new ValidationError("invalid_argument", "rng.pick on an empty list");
    return items[this.int(0, items.length - 1)] as T;
  }

  /** One element chosen with probability proportional to its weight. */
  weighted<T>(items: readonly T[], weights: readonly number[]): T {
    if (items.length === 0 || items.length !== weights.length) {
      throw new ValidationError("invalid_argument", "rng.weighted needs as many weights as items (> 0)");
    }
    const total = weights.reduce((a, w) => {
      if (!(w >= 0) || !Number.isFinite(w)) throw new ValidationError("invalid_argument", "weights must be finite and >= 0");
      return a + w;
    }, 0);
    if (total <= 0) throw new ValidationError("invalid_argument", "rng.weighted needs a positive total weight");
    let r = this.float() * total;
    for (let i = 0; i < items.length; i++) {
      r -= weights[i] as number;
      if (r < 0) return items[i] as T;
    }
    return items[items.length - 1] as T;
  }

  /** A shuffled copy (Fisher-Yates). */
  shuffle<T>(items: readonly T[]): T[] {
    const out = items.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(0, i);
      [out[i], out[j]] = [out[j] as T, out[i] as T];
    }
    return out;
  }

  /** k distinct elements in random order. */
  sample<T>(items: readonly T[], k: number): T[] {
    if (!Number.isSafeInteger(k) || k < 0 || k > items.length) {
      throw new ValidationError("invalid_argument", `rng.sample: k must be an integer in [0, ${items.length}], got ${k}`);
    }
    return this.shuffle(items).slice(0, k);
  }

  /** Standard normal draw (Box-Muller). */
  normal(mean = 0, std = 1): number {
    let u = this.float();
    while (u === 0) u = this.float();
    const v = this.float();
    return mean + std * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }
}

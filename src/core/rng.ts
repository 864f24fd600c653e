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
    const x = BigInt.asUintN(64, BigInt(seed));
    return new Rng(splitMixWords(Number(x >> 32n), Number(x & 0xffffffffn)), key);
  }

  /** A generator whose stream depends only on the key parts, e.g. (env, taskId, seed). */
  static fromKey(...parts: ReadonlyArray<string | number>): Rng {
    const key = parts.map((p) => String(p)).join("\u241f");
    // The seed is the first 8 bytes of SHA-256(key), read little-endian.
    const h = sha256(key);
    return new Rng(splitMixWords(bswap32(h[1]!), bswap32(h[0]!)), key);
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

// ----- key derivation without BigInt or node:crypto ---------------------------------------------------
// Resets derive several streams; BigInt arithmetic and a native hash object per key cost more than the
// rest of a stream's setup. These give the same numbers as SplitMix64 and createHash("sha256") (tests
// compare them on random inputs).

/** The low 64 bits of (ahi:alo) * (bhi:blo), as [hi, lo] uint32 words. */
function mul64(ahi: number, alo: number, bhi: number, blo: number, out: Uint32Array): void {
  const a0 = alo & 0xffff;
  const a1 = alo >>> 16;
  const b0 = blo & 0xffff;
  const b1 = blo >>> 16;
  const mid = a1 * b0 + a0 * b1; // < 2^33, exact
  const low = a0 * b0 + (mid % 0x10000) * 0x10000; // < 2^33, exact
  const carry = Math.floor(low / 0x100000000);
  out[1] = low; // ToUint32: low mod 2^32
  out[0] = a1 * b1 + Math.floor(mid / 0x10000) + carry + Math.imul(alo, bhi) + Math.imul(ahi, blo);
}

const MUL = new Uint32Array(2);

/** SplitMix64's mixing function on (hi:lo), as [hi, lo]. */
function mix64(hi: number, lo: number, out: Uint32Array): void {
  // z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
  lo = (lo ^ ((lo >>> 30) | (hi << 2))) >>> 0;
  hi = (hi ^ (hi >>> 30)) >>> 0;
  mul64(hi, lo, 0xbf58476d, 0x1ce4e5b9, MUL);
  hi = MUL[0]!;
  lo = MUL[1]!;
  // z = (z ^ (z >> 27)) * 0x94d049bb133111eb
  lo = (lo ^ ((lo >>> 27) | (hi << 5))) >>> 0;
  hi = (hi ^ (hi >>> 27)) >>> 0;
  mul64(hi, lo, 0x94d049bb, 0x133111eb, MUL);
  hi = MUL[0]!;
  lo = MUL[1]!;
  // z ^ (z >> 31)
  out[1] = lo ^ ((lo >>> 31) | (hi << 1));
  out[0] = hi ^ (hi >>> 31);
}

const MIX = new Uint32Array(2);

/** The xoshiro state `fromSeed` builds from a 64-bit seed (hi:lo): two SplitMix64 outputs, low word first. */
function splitMixWords(hi: number, lo: number): [number, number, number, number] {
  // x += GOLDEN_GAMMA, twice
  let l = lo + 0x7f4a7c15;
  let h = (hi + 0x9e3779b9 + (l > 0xffffffff ? 1 : 0)) >>> 0;
  l >>>= 0;
  mix64(h, l, MIX);
  const a1 = MIX[0]!;
  const a0 = MIX[1]!;
  const l2 = l + 0x7f4a7c15;
  h = (h + 0x9e3779b9 + (l2 > 0xffffffff ? 1 : 0)) >>> 0;
  l = l2 >>> 0;
  mix64(h, l, MIX);
  return [a0, a1, MIX[1]!, MIX[0]!];
}

function bswap32(x: number): number {
  return ((x >>> 24) | ((x >>> 8) & 0xff00) | ((x << 8) & 0xff0000) | (x << 24)) >>> 0;
}

const SHA256_K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const SHA256_W = new Int32Array(64);
const SHA256_H = new Int32Array(8);
const utf8 = new TextEncoder();
let shaBlock = new Uint8Array(256);

/** SHA-256 of the UTF-8 bytes of `text` (lone surrogates as U+FFFD, as Node encodes them), as 8 big-endian words. */
function sha256(text: string): Int32Array {
  // UTF-8 needs at most 3 bytes per UTF-16 code unit; then 0x80, padding and the 8-byte length.
  const room = Math.ceil((text.length * 3 + 9) / 64) * 64;
  if (shaBlock.length < room) shaBlock = new Uint8Array(room);
  const { written } = utf8.encodeInto(text, shaBlock);
  const n = written;
  const total = Math.ceil((n + 9) / 64) * 64;
  const m = shaBlock;
  m.fill(0, n, total);
  m[n] = 0x80;
  const bits = n * 8;
  m[total - 4] = bits >>> 24;
  m[total - 3] = bits >>> 16;
  m[total - 2] = bits >>> 8;
  m[total - 1] = bits;
  m[total - 5] = Math.floor(bits / 0x100000000);
  const H = SHA256_H;
  H[0] = 0x6a09e667; H[1] = 0xbb67ae85; H[2] = 0x3c6ef372; H[3] = 0xa54ff53a;
  H[4] = 0x510e527f; H[5] = 0x9b05688c; H[6] = 0x1f83d9ab; H[7] = 0x5be0cd19;
  const W = SHA256_W;
  const K = SHA256_K;
  for (let off = 0; off < total; off += 64) {
    for (let t = 0; t < 16; t++) {
      const o = off + t * 4;
      W[t] = (m[o]! << 24) | (m[o + 1]! << 16) | (m[o + 2]! << 8) | m[o + 3]!;
    }
    for (let t = 16; t < 64; t++) {
      const w15 = W[t - 15]!;
      const w2 = W[t - 2]!;
      const s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3);
      const s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10);
      W[t] = (W[t - 16]! + s0 + W[t - 7]! + s1) | 0;
    }
    let a = H[0]!, b = H[1]!, c = H[2]!, d = H[3]!, e = H[4]!, f = H[5]!, g = H[6]!, h = H[7]!;
    for (let t = 0; t < 64; t++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const ch = (e & f) ^ (~e & g);
      const t1 = (h + S1 + ch + K[t]! + W[t]!) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    H[0] = (H[0]! + a) | 0; H[1] = (H[1]! + b) | 0; H[2] = (H[2]! + c) | 0; H[3] = (H[3]! + d) | 0;
    H[4] = (H[4]! + e) | 0; H[5] = (H[5]! + f) | 0; H[6] = (H[6]! + g) | 0; H[7] = (H[7]! + h) | 0;
  }
  return H.slice();
}

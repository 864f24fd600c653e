/**
 * `Rng.fromKey` and `Rng.fromSeed` derive state with hand-written SHA-256 and 32-bit SplitMix64 (no
 * BigInt, no node:crypto per key). They must give exactly what the reference derivation gives:
 * SHA-256 from node:crypto, first 8 bytes little-endian, two outputs of the BigInt `SplitMix64`.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { Rng, SplitMix64 } from "../../src/index.js";

function referenceFromSeed(seed: bigint): number[] {
  const sm = new SplitMix64(seed);
  const a = sm.next();
  const b = sm.next();
  return [Number(a & 0xffffffffn), Number(a >> 32n), Number(b & 0xffffffffn), Number(b >> 32n)];
}

function referenceFromKey(...parts: Array<string | number>): number[] {
  const key = parts.map(String).join("\u241f");
  return referenceFromSeed(createHash("sha256").update(key).digest().readBigUInt64LE(0));
}

describe("stream derivation", () => {
  it("fromSeed equals the BigInt SplitMix64 expansion (edge and 20,000 random seeds)", () => {
    const rng = Rng.fromSeed(99);
    const seeds = [0n, 1n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 63n, 2n ** 64n - 1n, 0x9e3779b97f4a7c15n, 0x6184c8e680b583ebn];
    for (let i = 0; i < 20_000; i++) seeds.push((BigInt(rng.nextUint32()) << 32n) | BigInt(rng.nextUint32()));
    for (const seed of seeds) expect(Rng.fromSeed(seed).state().s).toEqual(referenceFromSeed(seed));
    for (const n of [0, 7, -1, -5, 2 ** 53 - 1, -(2 ** 53 - 1)]) {
      expect(Rng.fromSeed(n).state().s).toEqual(referenceFromSeed(BigInt.asUintN(64, BigInt(n))));
    }
  });

  it("fromKey equals SHA-256 via node:crypto for keys of every length, multi-byte and lone surrogates included", () => {
    const rng = Rng.fromSeed(7);
    const alphabet = ["a", "Z", "0", "-", "/", " ", "\u241f", "é", "日本", "😀", "\ud800", "\udc00", "billing-dispute/hard/seed-"];
    for (let i = 0; i < 5_000; i++) {
      let key = "";
      // 0 to 300 parts: SHA-256 padding boundaries (55, 56, 64 bytes) and multi-block messages are covered.
      for (let k = rng.int(0, i % 10 === 0 ? 300 : 40); k > 0; k--) key += rng.pick(alphabet);
      expect(Rng.fromKey(key, i).state().s).toEqual(referenceFromKey(key, i));
    }
    for (let len = 0; len < 200; len++) expect(Rng.fromKey("x".repeat(len)).state().s).toEqual(referenceFromKey("x".repeat(len)));
    expect(Rng.fromKey().state().s).toEqual(referenceFromKey());
  });
});

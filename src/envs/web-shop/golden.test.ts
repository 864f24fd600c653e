/**
 * Golden fingerprints (DESIGN §2): what a web-shop task id generates and the snapshot its reset produces
 * are pinned. A change that alters them must bump the environment's version and update these.
 */
import { describe, expect, it } from "vitest";
import { expectGolden, type GoldenRow } from "../../../test/helpers.js";
import entry from "./index.js";

const GOLDEN = [
  ["web-shop/easy/seed-1", "2750a331206be6f107292b113b3881d6c91ed79566b911dd9985575edc2019f1", "afb884a9e165d367ff55be63585e3cf6773e9047ef90c33bf9bc8f95bfcf51b9"],
  ["web-shop/medium/seed-42", "33a27c323c98969b9b66410d40a6a6b07a244427466a7a47b30e69cae969cd9b", "a8b8bc07d21969d8beec078212d75f0406f0acc8a01445908e421ea38afab865"],
  ["web-shop/hard/seed-771", "2e5961136f3b2e24eaab31932e18eaae028d79d7c904a55d822857b8e917d5dd", "3952b8eae090c2f310ffbabefe84eef17068d594b2a567f0f4d730e0a5d90621"],
] as const satisfies readonly GoldenRow[];

describe(`golden fingerprints of ${entry.id}@${entry.version}`, () => {
  it.each(GOLDEN)("%s", async (...row) => {
    expect(entry.version).toBe("1.0.0");
    await expectGolden(entry, row);
  });
});

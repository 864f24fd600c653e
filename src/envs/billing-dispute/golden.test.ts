/**
 * Golden fingerprints (DESIGN §2): what a billing-dispute task id generates and the snapshot its reset
 * produces are pinned. A change that alters them must bump the environment's version and update these.
 */
import { describe, expect, it } from "vitest";
import { expectGolden, type GoldenRow } from "../../../test/helpers.js";
import entry from "./index.js";

const GOLDEN = [
  ["billing-dispute/easy/seed-1", "c271d60986bc5c7dcf0c1583944077b4a690ccb32e1dd5c64903417915693bc8", "f41c404c8e8bd882a6248bca253c874fa190ea7c41010b177d102ffaf5b9c3cf"],
  ["billing-dispute/medium/seed-42", "5affb9faa8f48c2447de8977415875688af2fda906e115945893eeb8c099f846", "86c1df0c148718c8b399a82514e15e6e6786c288341d6961a255bbd232eb0484"],
  ["billing-dispute/hard/seed-771", "08477e01ae77b1f9ae9b9a5eacd7d0e0f9d6099b1ddfc6c3920251ca611f71d8", "50d5efb01f6da40b71a67d927a2815529fdb02c70eea2d2e2c5ccfb204eb5398"],
] as const satisfies readonly GoldenRow[];

describe(`golden fingerprints of ${entry.id}@${entry.version}`, () => {
  it.each(GOLDEN)("%s", async (...row) => {
    expect(entry.version).toBe("1.0.0");
    await expectGolden(entry, row);
  });
});

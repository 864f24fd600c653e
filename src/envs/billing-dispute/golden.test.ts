/**
 * Golden fingerprints (DESIGN §2): what a billing-dispute task id generates and the snapshot its reset
 * produces are pinned. A change that alters them must bump the environment's version and update these.
 */
import { describe, expect, it } from "vitest";
import { expectGolden, type GoldenRow } from "../../../test/helpers.js";
import entry from "./index.js";

const GOLDEN = [
  ["billing-dispute/easy/seed-1", "c271d60986bc5c7dcf0c1583944077b4a690ccb32e1dd5c64903417915693bc8", "5693058fd7e855114121f3b0c320b22fd4822982f861e6f18f876e77a1063e04"],
  ["billing-dispute/medium/seed-42", "5affb9faa8f48c2447de8977415875688af2fda906e115945893eeb8c099f846", "af8cb5e2bff66796c1b014b8e9e24af917e2a23bdfff6084936d1a46cf8dbf71"],
  ["billing-dispute/hard/seed-771", "08477e01ae77b1f9ae9b9a5eacd7d0e0f9d6099b1ddfc6c3920251ca611f71d8", "2d5f0808e8b327edd354320a4017e1d5badbec5d99c34c0293e9d1b866e6d1da"],
] as const satisfies readonly GoldenRow[];

describe(`golden fingerprints of ${entry.id}@${entry.version}`, () => {
  it.each(GOLDEN)("%s", async (...row) => {
    expect(entry.version).toBe("1.1.0");
    await expectGolden(entry, row);
  });
});

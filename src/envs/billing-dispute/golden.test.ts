/**
 * Golden fingerprints (DESIGN §2): what a billing-dispute task id generates and the snapshot its reset
 * produces are pinned. A change that alters them must bump the environment's version and update these.
 */
import { describe, expect, it } from "vitest";
import { expectGolden, type GoldenRow } from "../../../test/helpers.js";
import entry from "./index.js";

const GOLDEN = [
  ["billing-dispute/easy/seed-1", "c271d60986bc5c7dcf0c1583944077b4a690ccb32e1dd5c64903417915693bc8", "d82c78bef6682089bfe4a9b793c916d1c73c350d3455a83d86276df9fb234883"],
  ["billing-dispute/medium/seed-42", "5affb9faa8f48c2447de8977415875688af2fda906e115945893eeb8c099f846", "ef5b13a107a3f471118be20088cb14568ff77bae917282e27ee853ec989a44f4"],
  ["billing-dispute/hard/seed-771", "08477e01ae77b1f9ae9b9a5eacd7d0e0f9d6099b1ddfc6c3920251ca611f71d8", "444669007426928ac19622e1c1f02e435d7c6f51f4ffe17f17bae6b10b362a73"],
] as const satisfies readonly GoldenRow[];

describe(`golden fingerprints of ${entry.id}@${entry.version}`, () => {
  it.each(GOLDEN)("%s", async (...row) => {
    expect(entry.version).toBe("1.2.0");
    await expectGolden(entry, row);
  });
});

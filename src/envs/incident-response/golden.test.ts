/**
 * Golden fingerprints (DESIGN §2): what an incident-response task id generates, the snapshot its reset
 * produces and the file system the agent sees are pinned. A change that alters them must bump the
 * environment's version and update these.
 */
import { describe, expect, it } from "vitest";
import { fingerprint } from "../../core/json.js";
import { expectGolden } from "../../../test/helpers.js";
import type { World } from "./world.js";
import entry from "./index.js";

// 1.4.0: the scenario (family, variant, counts of attackers, compromised accounts, affected hosts and look-alikes) is drawn first and
// redrawn until its combination is of the id's split; the allowlist names three more vendors: every task changes.
const GOLDEN = [
  ["incident-response/easy/seed-1", "e77f17974d36e6c84c85dbaa8ce590cb712582ad42dc7d582c886aae58c9a8a0", "f6a1fc5eec85126d3e377d507aeb695f28bd1e70ecf77f808a20bafc36c7b4d0", "230833f161a5b035a0455f32caec16430f068445de5b6eb992c427db3c08ca1e"],
  ["incident-response/medium/seed-42", "551b30b2c03fa34065a195ac0bee9bfe0688f60f0db20fa1c1007e13761fd110", "efd1d8bef87e41419e7073a2daf62a6244d0bcb8c02e5420e2134e7e648bb526", "c3d86bb3d1509cf81713a3564f3fbaf781aff9a537de2713c5b2d189cab27702"],
  ["incident-response/hard/seed-771", "4863c489c5ab37ae688f2a98beea715f1703c630e4ae9d87ca94e228800c5055", "56f880904f5806834fda142530e5d882680c1f67cd1d83ad7cd95260a4db3ed3", "5bb623524ac4b544d04bbf78cbe6c8719916a85679047377c22aff7d762c23c6"],
] as const;

describe(`golden fingerprints of ${entry.id}@${entry.version}`, () => {
  it.each(GOLDEN)("%s", async (taskId, task, snapshot, files) => {
    expect(entry.version).toBe("1.4.0");
    await expectGolden(entry, [taskId, task, snapshot], (env) => {
      // The snapshot leaves the logs out (they are rebuilt from the task), so the built file system is pinned too.
      const world = (env as unknown as { episode: { world: World } }).episode.world;
      expect(fingerprint(world.fs.asOwner().snapshot())).toBe(files);
    });
  });
});

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

// 1.3.0: the terminal has awk, and the address arguments publish their IPv4/CIDR pattern; task fingerprints are unchanged, snapshots carry the new version.
const GOLDEN = [
  ["incident-response/easy/seed-1", "90b64317c093a2090b4db32d619815e95ebfff9546fcc79def40a2abd23f1464", "39756c673de8084ba47130407c260504e432b14ca54f50d32b691f03a94e3475", "355a598feb503667fb508453ff89cb11234b49bd0e847fd7f71744fcdad73153"],
  ["incident-response/medium/seed-42", "2c1103a27636ae5d95058bdd34d02236b9156d0173f050ce6c409c54bc7e4709", "87a5f0765e663a0805ccd5b06987c3c29970ea9d8fb77991a95a7118f5c0831d", "2294341a200b501eb17d4bc32b2096282766c73270d4b92b534359cd36b12d7b"],
  ["incident-response/hard/seed-771", "1475919a4c1a5ea513ec12649deafa3f52485e954007209e2e1eba81ca162b24", "c8106343bb8aabf67a2539f138e83b897e11e0f78186a5cd586b0d74a8e8aa4c", "ff22f35cc556c4c8561c54053015b84c549103a10830334c105314bf457ed26f"],
] as const;

describe(`golden fingerprints of ${entry.id}@${entry.version}`, () => {
  it.each(GOLDEN)("%s", async (taskId, task, snapshot, files) => {
    expect(entry.version).toBe("1.3.0");
    await expectGolden(entry, [taskId, task, snapshot], (env) => {
      // The snapshot leaves the logs out (they are rebuilt from the task), so the built file system is pinned too.
      const world = (env as unknown as { episode: { world: World } }).episode.world;
      expect(fingerprint(world.fs.asOwner().snapshot())).toBe(files);
    });
  });
});

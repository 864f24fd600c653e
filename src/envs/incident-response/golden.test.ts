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

const GOLDEN = [
  ["incident-response/easy/seed-1", "90b64317c093a2090b4db32d619815e95ebfff9546fcc79def40a2abd23f1464", "66737f18c2b62f07f242d84d6848080ace5d3ed9827c2c0a90267455e3cbc17e", "355a598feb503667fb508453ff89cb11234b49bd0e847fd7f71744fcdad73153"],
  ["incident-response/medium/seed-42", "2c1103a27636ae5d95058bdd34d02236b9156d0173f050ce6c409c54bc7e4709", "3f97536ec2d658aa9331c3d750db690abf50ed06efc96798e0c9efbb63a9d59e", "2294341a200b501eb17d4bc32b2096282766c73270d4b92b534359cd36b12d7b"],
  ["incident-response/hard/seed-771", "1475919a4c1a5ea513ec12649deafa3f52485e954007209e2e1eba81ca162b24", "62efdc5117e6ac8274ded1c6f938455b150360a9f73eeb664a7397b28ba5e6cc", "ff22f35cc556c4c8561c54053015b84c549103a10830334c105314bf457ed26f"],
] as const;

describe(`golden fingerprints of ${entry.id}@${entry.version}`, () => {
  it.each(GOLDEN)("%s", async (taskId, task, snapshot, files) => {
    expect(entry.version).toBe("1.2.0");
    await expectGolden(entry, [taskId, task, snapshot], (env) => {
      // The snapshot leaves the logs out (they are rebuilt from the task), so the built file system is pinned too.
      const world = (env as unknown as { episode: { world: World } }).episode.world;
      expect(fingerprint(world.fs.asOwner().snapshot())).toBe(files);
    });
  });
});

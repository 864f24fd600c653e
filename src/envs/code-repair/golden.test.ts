/**
 * Golden fingerprints (DESIGN §2): what a code-repair task id generates and the snapshot its reset
 * produces are pinned, and so is the outcome of a reference episode (the code sandbox is deterministic).
 * A change that alters them must bump the environment's version and update these.
 */
import { describe, expect, it } from "vitest";
import { fingerprint } from "../../core/json.js";
import { runPolicy } from "../../core/run-policy.js";
import { expectGolden, type GoldenRow } from "../../../test/helpers.js";
import entry from "./index.js";

const GOLDEN = [
  // 1.2.0: bugs drawn from the task's split of the bug catalogue; hidden API checks (.hidden/api.test.js).
  ["code-repair/easy/seed-1", "d55400bc07b95fb06818aa7ffc9e44315cc9084f8d972ddd6b78e5f20e730b21", "922d6c415c4176c47a74c89136f238cea5f5a689e776132ad1ba1c715897d8bc"],
  ["code-repair/medium/seed-42", "52f441981fcdc98f4661415bd179dac7d695c91b37d8f4133084a0255289ef31", "be0b0178c83b01f9f6548fae763249ab6a4da3ead3a41fc911ac6ec1ccb4f368"],
  ["code-repair/hard/seed-771", "1f55eeb6b557b986994e7468e3d131e72329907472b3f85fa7f0e8e3cec407fe", "ada3679c4efaaeaa41251a5cf1802d2d440887daca3339bfe35f8b32cd3d916f"],
] as const satisfies readonly GoldenRow[];

describe(`golden fingerprints of ${entry.id}@${entry.version}`, () => {
  it.each(GOLDEN)("%s", async (...row) => {
    expect(entry.version).toBe("1.2.0");
    await expectGolden(entry, row);
  });

  it("replays a reference episode to identical records, twice and on two instances", async () => {
    const play = async () => {
      const env = entry.create();
      const initial = await env.reset("code-repair/hard/seed-771", 7);
      const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
      const out = fingerprint({ steps: run.transitions.map((t) => ({ a: t.action, r: t.result })) as never, snapshot: (await env.snapshot()) as never });
      await env.close();
      return out;
    };
    expect(await play()).toBe(await play());
  });
});

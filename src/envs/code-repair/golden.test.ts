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
  // 1.3.0: the terminal has awk (the tool's description lists it); task fingerprints are unchanged, snapshots carry the new version.
  ["code-repair/easy/seed-1", "d55400bc07b95fb06818aa7ffc9e44315cc9084f8d972ddd6b78e5f20e730b21", "94902664ae740e256a897983c1528ba3391328c5565a7946aba8e8c744087b71"],
  ["code-repair/medium/seed-42", "52f441981fcdc98f4661415bd179dac7d695c91b37d8f4133084a0255289ef31", "fc236943551b1de150015cea3ac4aa5c25e3478a17af1f259394cffcf104660c"],
  ["code-repair/hard/seed-771", "1f55eeb6b557b986994e7468e3d131e72329907472b3f85fa7f0e8e3cec407fe", "724968613154b8adb9cc4427df3abfdde232636056030f1b63c2c9aa874d4d0e"],
] as const satisfies readonly GoldenRow[];

describe(`golden fingerprints of ${entry.id}@${entry.version}`, () => {
  it.each(GOLDEN)("%s", async (...row) => {
    expect(entry.version).toBe("1.3.0");
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

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
  // 1.4.0: 14 more bugs (6 new kinds: wrong-operator, swapped-operands, wrong-initial-value, wrong-logic, type-coercion, early-return; sumBy), 2-3 / 3-4 bugs on medium / hard, bug reports, medium variants, held-out scenario combinations on medium and hard.
  ["code-repair/easy/seed-1", "ab172767f2baa06a594bcad7b502ac327fa47998fb5676ca9cd73c62e21228cd", "ad6f5cc441cba2f7c4e07e7e73fd30feabb8f08d47a0fac77ce8a6aea7536737"],
  ["code-repair/medium/seed-42", "0a2c9a6a4adf7a1a924e1b6220f94eb8c35fb31b37422ec36e5d9777e06128f5", "e8d30f5d906cdb6d3bcee5457e881719a1020d6fc81779496c5351c41439bfe8"],
  ["code-repair/hard/seed-771", "85a19d297a553ba8bf84912d9a62f32a6b47fa6c92d8fcfce4ff19181ccae162", "2a50548240d80152563ed754fccc6807132e027b29ae0c64ad219fa33f5f1428"],
] as const satisfies readonly GoldenRow[];

describe(`golden fingerprints of ${entry.id}@${entry.version}`, () => {
  it.each(GOLDEN)("%s", async (...row) => {
    expect(entry.version).toBe("1.4.0");
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

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
  ["code-repair/easy/seed-1", "3c5d4b4cab1d406998adffe7a800dadb48f5b4fc2a7e9c3fe7d70d2022977b1d", "185003a6f65f9f50279dcfda87224d37fea4568d6c553d841f2ce91490888263"],
  ["code-repair/medium/seed-42", "b828623007a5dad90699d631bb7fcbbcf531ee2219d6bd6428314656c498f8e9", "64fb0d35d0cbd21d9aa052e939b0ae98a34b76bc7070692842740e7e26626ec8"],
  ["code-repair/hard/seed-771", "10db32a53dcba047491086872a95fe9c5960543ef2c53c048cbdf0d1e0a9cc82", "d23b7abdb30a3682a52598b0722b9882207eab0eaad2f06d79f660f9d79a6404"],
] as const satisfies readonly GoldenRow[];

describe(`golden fingerprints of ${entry.id}@${entry.version}`, () => {
  it.each(GOLDEN)("%s", async (...row) => {
    expect(entry.version).toBe("1.0.0");
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

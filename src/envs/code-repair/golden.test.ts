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
  // 1.1.0: bug-triggering inputs drawn from wide distributions, hidden tests avoid the visible tests' first arguments.
  ["code-repair/easy/seed-1", "484e2a0f9f407cb989cd08c9cc847cff4d5f1cc84ab5b26befb7bb122e94efc7", "8a89cd027ee0d729baafc5517274ea63a0e572a870674e5c07c53dd5398bd063"],
  ["code-repair/medium/seed-42", "8e6d8188c9af7c3ff36cd0068358d9aa2fcf70f87f1eeb3b9559833762001ae7", "525ab4b2ba96a78bc8b955a0dcc6787a346766e6c38917cfc5fc84e213f064af"],
  ["code-repair/hard/seed-771", "b9efba18149eda8b6dd28f45ad5cee5ef7e721b8da5e168e1083309847028cdf", "12258376046cd1cfa92ab686959b5eb94a16f1e90d0b01c30e93b6c43ac791ac"],
] as const satisfies readonly GoldenRow[];

describe(`golden fingerprints of ${entry.id}@${entry.version}`, () => {
  it.each(GOLDEN)("%s", async (...row) => {
    expect(entry.version).toBe("1.1.0");
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

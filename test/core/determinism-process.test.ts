/**
 * Same (taskId, seed) => same episode, byte for byte, across separate Node processes (DESIGN §2).
 * Each run spawns `node --import tsx test/fixtures/print-episode.ts ...`, which runs the reference
 * solver and prints sha256 hashes of the canonical JSON of every observation and the final snapshot.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { canonicalJson, runPolicy, sha256 } from "../../src/index.js";
import { TinyEnv } from "../fixtures/tiny-env.js";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));
const script = fileURLToPath(new URL("../fixtures/print-episode.ts", import.meta.url));

interface EpisodeHashes {
  llmix: string;
  steps: number;
  task: number | null;
  observations: string;
  snapshot: string;
  all: string;
}

async function episodeInChild(env: "tiny" | "inventory", taskId: string, seed: number): Promise<EpisodeHashes> {
  const { stdout } = await run(process.execPath, ["--import", "tsx", script, env, taskId, String(seed)], {
    cwd: root,
    env: { ...process.env, TSX_TSCONFIG_PATH: "tsconfig.test.json" },
    timeout: 60_000,
  });
  const hashes = JSON.parse(stdout.trim()) as EpisodeHashes;
  // the child must run the source tree, not a stale build
  expect(hashes.llmix).toMatch(/\/src\/index\.ts$/);
  return hashes;
}

describe("determinism across processes", () => {
  it("inventory-restock: two processes give identical observations and snapshots", async () => {
    const [a, b] = await Promise.all([
      episodeInChild("inventory", "inventory-restock/hard/seed-3", 5),
      episodeInChild("inventory", "inventory-restock/hard/seed-3", 5),
    ]);
    expect(a.task).toBe(1);
    expect(a.steps).toBeGreaterThan(2);
    expect(b).toEqual(a);

    const otherSeed = await episodeInChild("inventory", "inventory-restock/hard/seed-3", 6);
    expect(otherSeed.snapshot).not.toBe(a.snapshot);
    expect(otherSeed.all).not.toBe(a.all);
    const otherTask = await episodeInChild("inventory", "inventory-restock/hard/seed-4", 5);
    expect(otherTask.observations).not.toBe(a.observations);
  });

  it("tiny env: two processes agree, and agree with this process", async () => {
    const [a, b, otherSeed] = await Promise.all([
      episodeInChild("tiny", "tiny/easy/seed-3", 5),
      episodeInChild("tiny", "tiny/easy/seed-3", 5),
      episodeInChild("tiny", "tiny/easy/seed-3", 6),
    ]);
    expect(a.task).toBe(1);
    expect(b).toEqual(a);
    expect(otherSeed.observations).not.toBe(a.observations);
    expect(otherSeed.snapshot).not.toBe(a.snapshot);

    // the same computation inside the vitest worker
    const env = new TinyEnv();
    const initial = await env.reset("tiny/easy/seed-3", 5);
    const episode = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
    const observations = [initial, ...episode.transitions.map((t) => t.result.observation)];
    expect(sha256(canonicalJson(observations))).toBe(a.observations);
    expect(sha256(canonicalJson(await env.snapshot()))).toBe(a.snapshot);
  });
});

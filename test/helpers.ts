import { spawn } from "node:child_process";
import { join } from "node:path";
import { expect } from "vitest";
import { LlmixError } from "../src/index.js";
import type { Action, StepResult } from "../src/core/contract.js";
import type { EnvironmentSnapshot } from "../src/core/environment.js";
import { canonicalJson, fingerprint } from "../src/core/json.js";
import { toDecision } from "../src/core/policy.js";
import { Rng } from "../src/core/rng.js";
import { randomPolicy } from "../src/rollout/policies/random.js";
import type { AnyEnvironment, EnvironmentEntry } from "../src/core/registry.js";
import type { RolloutConfig } from "../src/rollout/plan.js";
import { generateTask, taskFingerprint } from "../src/tasks/generator.js";

/** The code of the LlmixError `fn` throws (failing the test if it throws anything else), or undefined. */
export function errorCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(LlmixError);
    return (error as LlmixError).code;
  }
  return undefined;
}

/** A golden row: task id, the task's fingerprint, and the fingerprint of the snapshot after reset(taskId, 7). */
export type GoldenRow = readonly [taskId: string, task: string, snapshot: string];

/**
 * Check an environment's golden fingerprints (DESIGN §2): the task an id generates and the snapshot its
 * reset produces. `extra` may pin more of the reset episode (e.g. state a snapshot leaves out).
 */
export async function expectGolden(entry: EnvironmentEntry, [taskId, task, snapshot]: GoldenRow, extra?: (env: AnyEnvironment) => void): Promise<void> {
  const env = entry.create();
  try {
    expect(taskFingerprint(generateTask(env.tasks, taskId).task)).toBe(task);
    await env.reset(taskId, 7);
    expect(fingerprint(await env.snapshot())).toBe(snapshot);
    extra?.(env);
  } finally {
    await env.close();
  }
}

/** A rollout config for tests: 8 noisy-oracle billing-dispute episodes in easy groups of 4, seed 5, plus `over`. */
export function rolloutConfig(over: Partial<RolloutConfig> = {}): RolloutConfig {
  return {
    env: "billing-dispute", policy: "noisy-oracle:0.3", policy_checkpoint: null, n: 8, group: 4, difficulties: ["easy"], split: null,
    task_ids: null, seed: 5, timeout_ms: 60_000, env_options: {}, modules: [], ...over,
  };
}

/** The error a promise rejects with (the test fails if it resolves). */
export async function rejection<E = LlmixError>(promise: Promise<unknown>): Promise<E> {
  try {
    await promise;
  } catch (error) {
    return error as E;
  }
  throw new Error("expected a rejection");
}

/**
 * Snapshot -> restore -> snapshot after every step of many episodes, on a second instance: each must be
 * byte-identical, so an environment's worldSchema and restore checks accept everything it produces.
 * Episode i runs task `ids[i]` with seed i, its actions drawn from the reference solver or, with
 * probability `randomShares[i % n]`, a random policy; returns how many restores were checked.
 */
export async function expectRoundTrips(create: () => AnyEnvironment, ids: readonly string[], options: { messageRate: number; randomShares: readonly number[] }): Promise<number> {
  let restores = 0;
  for (const [i, id] of ids.entries()) {
    const env = create();
    const peer = create();
    let observation = await env.reset(id, i);
    const reference = env.referenceSolver();
    const random = randomPolicy(id, { messageRate: options.messageRate });
    const mix = Rng.fromKey("mix", id);
    const randomShare = options.randomShares[i % options.randomShares.length] as number;
    const history: Array<{ action: Action; result: StepResult }> = [];
    for (let step = 1; step <= env.maxSteps; step++) {
      const policy = mix.float() < randomShare ? random : reference;
      const action = toDecision(await policy.act({ step, observation, tools: env.tools(), history })).action as Action;
      const result = await env.step(action);
      history.push({ action, result });
      observation = result.observation;
      const snapshot = JSON.parse(JSON.stringify(await env.snapshot())) as EnvironmentSnapshot;
      await peer.restore(snapshot);
      expect(canonicalJson(await peer.snapshot())).toBe(canonicalJson(snapshot));
      restores++;
      if (result.terminated || result.truncated) break;
    }
    await env.close();
    await peer.close();
  }
  return restores;
}

/** Run the built CLI (`npm test` builds it) without blocking this process, so servers it calls here keep answering. */
export function runCli(...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(process.cwd(), "dist/cli/bin.js"), ...args]);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

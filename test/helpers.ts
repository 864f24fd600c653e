import { expect } from "vitest";
import { LlmixError } from "../src/index.js";
import { fingerprint } from "../src/core/json.js";
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

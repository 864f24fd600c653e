/**
 * Task generators turn a task id into a task: a JSON-serializable specification of everything the
 * episode needs (world seed data, hidden facts, expected outcome, fault profiles). Generation is a pure
 * function of the id, so a task's content fingerprint identifies it.
 */
import type { JsonValue } from "../core/json.js";
import { fingerprint } from "../core/json.js";
import { Rng } from "../core/rng.js";
import type { TaskFeatureSet } from "./features.js";
import { parseTaskId, type TaskId } from "./task-id.js";

/** Turns task ids into tasks. `Task` must be JSON-serializable. */
export interface TaskGenerator<Task> {
  /** Families this generator accepts as the first id segment (usually just the environment id). */
  readonly families: readonly string[];
  /** Difficulties, in increasing order. */
  readonly difficulties: readonly string[];
  /** Build the task for an id. `rng` is derived from the id alone. */
  generate(id: TaskId, rng: Rng): Task;
  /** The features that make a task's scenario (features.ts): declared, and computed from a task. */
  features?: TaskFeatureSet<Task>;
}

/** Parse `raw` against the generator's rules and generate the task, with its id-derived stream. */
export function generateTask<Task>(generator: TaskGenerator<Task>, raw: string): { id: TaskId; task: Task } {
  const id = parseTaskId(raw, { families: generator.families, difficulties: generator.difficulties });
  return { id, task: generator.generate(id, Rng.fromKey("task", id.id)) };
}

/** Freeze a value and everything inside it, so a generated task cannot be changed by the episode that uses it. */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** Content fingerprint of a generated task (sha256 of canonical JSON). */
export function taskFingerprint(task: unknown): string {
  return fingerprint(task as JsonValue);
}

/**
 * Results of the reference replay (the reference solver run on a fresh copy of an episode's task and
 * seed), shared by every instance of an environment class in this thread. A result is a pure function
 * of the class, its options, the task id and the seed — the premise of the replay itself — so the k
 * rollout slots or service sessions of a GRPO group, each with its own instance, replay the reference
 * once between them instead of k times.
 */
import type { JsonValue } from "./json.js";

/** Ids for objects that cannot be compared by value (classes, tokenizers, functions in options). */
const objectIds = new WeakMap<object, number>();
let nextObjectId = 0;

function idOf(value: object): number {
  let id = objectIds.get(value);
  if (id === undefined) {
    id = nextObjectId++;
    objectIds.set(value, id);
  }
  return id;
}

function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return Array.isArray(value) || proto === Object.prototype || proto === null;
}

/**
 * The key of everything a reference result depends on besides its view: the environment class, its
 * options (plain data by value, with sorted keys; anything else, such as a tokenizer, by identity), the
 * task id and the seed.
 */
export function referenceKey(environmentClass: object, options: object, taskId: string, seed: number): string {
  const encoded = JSON.stringify(options, (_key, value: unknown) => {
    if (typeof value === "function" || (typeof value === "object" && value !== null && !isPlain(value))) return `@object:${idOf(value)}`;
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      const record = value as Record<string, unknown>;
      return Object.fromEntries(Object.keys(record).sort().map((k) => [k, record[k]]));
    }
    return value;
  });
  return `${idOf(environmentClass)}|${encoded}|${taskId}|${seed}`;
}

/**
 * Reference results by view (an object naming what was read from the final world), then by key; the
 * most recently used `capacity` per view are kept. A result still being computed is shared too, so
 * concurrent episodes of one group wait for one replay; a failed one is forgotten.
 */
export class ReferenceCache {
  private readonly byView = new WeakMap<object, Map<string, Promise<JsonValue>>>();

  constructor(private readonly capacity = 256) {}

  /** The cached result for (view, key), or `compute()`'s, which is cached. Callers must not mutate it. */
  get(view: object, key: string, compute: () => Promise<JsonValue>): Promise<JsonValue> {
    const results = this.resultsOf(view);
    const cached = results.get(key);
    if (cached !== undefined) {
      // Most recently used last: the first entry is the one to evict.
      results.delete(key);
      results.set(key, cached);
      return cached;
    }
    const fresh = compute();
    results.set(key, fresh);
    if (results.size > this.capacity) results.delete(results.keys().next().value as string);
    fresh.catch(() => {
      if (results.get(key) === fresh) results.delete(key);
    });
    return fresh;
  }

  /** The results of one view (an empty map the first time). */
  private resultsOf(view: object): Map<string, Promise<JsonValue>> {
    let results = this.byView.get(view);
    if (results === undefined) {
      results = new Map();
      this.byView.set(view, results);
    }
    return results;
  }
}

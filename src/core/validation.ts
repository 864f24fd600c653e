import type { z } from "zod";

/** One line per zod issue, each naming the path that was wrong: "args.amount: expected number". */
export function formatIssues(error: z.ZodError, root: string): string {
  return error.issues
    .map((issue) => {
      const path = [root, ...issue.path.map((p) => (typeof p === "number" ? `[${p}]` : String(p)))].join(".").replace(/\.\[/g, "[");
      return `${path}: ${issue.message}`;
    })
    .join("; ");
}

/**
 * A copy of `value` with null at the `paths` that name a missing entry of an object (optional fields a
 * model left out where the schema is strict mode's: required, but nullable). Returns `value` itself when
 * no entry is missing.
 */
export function withNullsAt(value: unknown, paths: ReadonlyArray<ReadonlyArray<PropertyKey>>): unknown {
  let copy: unknown = value;
  let changed = false;
  for (const path of paths) {
    if (path.length === 0) continue;
    let parent: unknown = copy;
    for (const key of path.slice(0, -1)) parent = (parent as Record<PropertyKey, unknown> | null)?.[key];
    const last = path[path.length - 1] as PropertyKey;
    if (!parent || typeof parent !== "object" || Array.isArray(parent) || Object.hasOwn(parent, last)) continue;
    if (!changed) {
      copy = structuredClone(value);
      changed = true;
      parent = copy;
      for (const key of path.slice(0, -1)) parent = (parent as Record<PropertyKey, unknown>)[key];
    }
    (parent as Record<PropertyKey, unknown>)[last] = null;
  }
  return copy;
}

/**
 * A copy of `value` without the object entries at `paths` whose value is null (strict-mode optional
 * fields the model filled with null). Returns `value` itself when no such entry exists.
 */
export function withoutNullsAt(value: unknown, paths: ReadonlyArray<ReadonlyArray<PropertyKey>>): unknown {
  let copy: unknown = value;
  let changed = false;
  for (const path of paths) {
    if (path.length === 0) continue;
    let parent: unknown = copy;
    for (const key of path.slice(0, -1)) parent = (parent as Record<PropertyKey, unknown> | null)?.[key];
    const last = path[path.length - 1] as PropertyKey;
    if (!parent || typeof parent !== "object" || Array.isArray(parent) || (parent as Record<PropertyKey, unknown>)[last] !== null) continue;
    if (!changed) {
      copy = structuredClone(value);
      changed = true;
      parent = copy;
      for (const key of path.slice(0, -1)) parent = (parent as Record<PropertyKey, unknown>)[key];
    }
    delete (parent as Record<PropertyKey, unknown>)[last];
  }
  return copy;
}

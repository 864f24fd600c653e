import { readFileSync } from "node:fs";
import type { z } from "zod";
import { ValidationError } from "./errors.js";

/** One line per zod issue, each naming the path that was wrong: "args.amount: expected number". */
export function formatIssues(error: z.ZodError, root: string): string {
  return error.issues
    .map((issue) => {
      const path = [root, ...issue.path.map((p) => (typeof p === "number" ? `[${p}]` : String(p)))].join(".").replace(/\.\[/g, "[");
      return `${path}: ${issue.message}`;
    })
    .join("; ");
}

type Entries = Record<PropertyKey, unknown>;

/**
 * A copy of `value` with null at the `paths` that name a missing entry of an object (optional fields a
 * model left out where the schema is strict mode's: required, but nullable). Returns `value` itself when
 * no entry is missing.
 */
export function withNullsAt(value: unknown, paths: ReadonlyArray<ReadonlyArray<PropertyKey>>): unknown {
  return editAt(value, paths, (parent, key) => !Object.hasOwn(parent, key), (parent, key) => void (parent[key] = null));
}

/**
 * A copy of `value` without the object entries at `paths` whose value is null (strict-mode optional
 * fields the model filled with null). Returns `value` itself when no such entry exists.
 */
export function withoutNullsAt(value: unknown, paths: ReadonlyArray<ReadonlyArray<PropertyKey>>): unknown {
  return editAt(value, paths, (parent, key) => parent[key] === null, (parent, key) => void delete parent[key]);
}

/**
 * Apply `edit` to the entry each path names in a plain object of `value`, where `applies` says so; the
 * copy is made on the first edit, so `value` itself comes back when nothing applied.
 */
function editAt(
  value: unknown,
  paths: ReadonlyArray<ReadonlyArray<PropertyKey>>,
  applies: (parent: Entries, key: PropertyKey) => boolean,
  edit: (parent: Entries, key: PropertyKey) => void,
): unknown {
  let copy: unknown = value;
  let changed = false;
  const parentIn = (root: unknown, path: ReadonlyArray<PropertyKey>) => {
    let parent: unknown = root;
    for (const key of path.slice(0, -1)) parent = (parent as Entries | null)?.[key];
    return parent;
  };
  for (const path of paths) {
    if (path.length === 0) continue;
    const last = path[path.length - 1] as PropertyKey;
    const parent = parentIn(copy, path);
    if (!parent || typeof parent !== "object" || Array.isArray(parent) || !applies(parent as Entries, last)) continue;
    if (!changed) {
      copy = structuredClone(value);
      changed = true;
    }
    edit(parentIn(copy, path) as Entries, last);
  }
  return copy;
}

/** The JSON value of a configuration file given by a flag; unreadable or malformed is invalid_config naming the flag and file. */
export function readJsonConfig(path: string, flag: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ValidationError("invalid_config", `${flag} ${path}: cannot read the file: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ValidationError("invalid_config", `${flag} ${path}: not valid JSON: ${(error as Error).message}`);
  }
}

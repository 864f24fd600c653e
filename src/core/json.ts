import { createHash } from "node:crypto";

/** A JSON value: what snapshots, task specs and records are made of. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * Canonical JSON: object keys sorted, no whitespace. Two equal values always give the same bytes,
 * which is what snapshot hashes and task fingerprints rely on. `undefined` object entries are dropped
 * (as JSON.stringify does); non-finite numbers are rejected because JSON cannot carry them.
 */
export function canonicalJson(value: unknown): string {
  return serialize(value, "$");
}

function serialize(value: unknown, path: string): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: non-finite number at ${path}`);
      return JSON.stringify(value);
    case "string":
      return JSON.stringify(value);
    case "object": {
      if (Array.isArray(value)) return `[${value.map((v, i) => serialize(v ?? null, `${path}[${i}]`)).join(",")}]`;
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj)
        .filter((k) => obj[k] !== undefined)
        .sort();
      return `{${keys.map((k) => `${JSON.stringify(k)}:${serialize(obj[k], `${path}.${k}`)}`).join(",")}}`;
    }
    default:
      throw new TypeError(`canonicalJson: cannot serialize ${typeof value} at ${path}`);
  }
}

/** Hex sha256 of a string or bytes. */
export function sha256(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** sha256 of the canonical JSON of a value: the fingerprint of tasks and snapshots. */
export function fingerprint(value: unknown): string {
  return sha256(canonicalJson(value));
}

/** A plain JSON copy of any value (what JSON.stringify keeps); a value JSON cannot hold becomes a string saying so. */
export function toJsonValue(value: unknown): JsonValue {
  try {
    return JSON.parse(JSON.stringify(value ?? null)) as JsonValue;
  } catch (error) {
    // String() of an object recurses as JSON.stringify does (a deep array overflows the stack again).
    return typeof value === "object" || typeof value === "function" ? `[not JSON: ${(error as Error).message}]` : String(value);
  }
}

/** Deep copy of a JSON value (structuredClone keeps it JSON-shaped). */
export function cloneJson<T>(value: T): T {
  return structuredClone(value);
}

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

/** A copy of a JSON-like value with every `null` object entry removed (strict-mode optional fields). */
export function withoutNullEntries(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNullEntries);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== null)
        .map(([k, v]) => [k, withoutNullEntries(v)]),
    );
  }
  return value;
}

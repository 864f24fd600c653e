/** How numbers, times and JSON are shown. The end-to-end test formats the API's figures the same way. */
import type { Json } from "./wire.js";

/** A share as a percentage with one decimal ("76.7%"), "–" when there is none. */
export function pct(value: number | null | undefined): string {
  return value === null || value === undefined ? "–" : `${(value * 100).toFixed(1)}%`;
}

/** A number: integers as they are, others with three decimals; "–" when there is none. */
export function num(value: number | null | undefined, decimals = 3): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "–";
  return Number.isInteger(value) ? String(value) : value.toFixed(decimals);
}

/** Milliseconds as "840 ms" or "2.3 s". */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "–";
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** An ISO time as local "YYYY-MM-DD HH:MM:SS". */
export function time(iso: string | null | undefined): string {
  if (!iso) return "–";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** Longest string shown whole inside JSON (screenshots travel as base64 in step info). */
const MAX_STRING = 2000;

/** JSON for display: indented, with very long strings cut and saying how long they were. */
export function prettyJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === "string" && v.length > MAX_STRING ? `${v.slice(0, 200)}… (${v.length} characters)` : v), 2) ?? "null";
}

/** Canonical JSON (sorted keys), to tell whether two values are the same. */
export function canonical(value: unknown): string {
  const sort = (v: unknown): Json => {
    if (Array.isArray(v)) return v.map(sort);
    if (v !== null && typeof v === "object") {
      const out: Record<string, Json> = {};
      for (const key of Object.keys(v).sort()) out[key] = sort((v as Record<string, unknown>)[key]);
      return out;
    }
    return (v ?? null) as Json;
  };
  return JSON.stringify(sort(value));
}

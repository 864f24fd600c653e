/**
 * Web applications for the web sandbox: deterministic apps written for LLMix. An app is a function from a
 * request (method, in-app path with query, form fields) to a response (an HTML page, a redirect or an
 * error page), computed from the episode's world only. Both drivers serve the same app: the fast driver
 * calls `handle` in-process, the browser driver serves it over loopback HTTP.
 *
 * Rules that keep the two drivers faithful and restores exact:
 * - GET never changes the world (a restore re-renders the current page by GETting it again);
 * - a POST that changes the world answers with a redirect (303) to a GET page (post/redirect/get), so
 *   the history holds only GET URLs and `back` re-renders from the world;
 * - pages carry no scripts: page behaviour is server-side (links and forms), so nothing in a page runs
 *   in the browser, and text the world holds (a review an attacker wrote) is only ever text.
 */

/** A request to an app: the path always starts with "/" and may carry a query string. */
export interface WebRequest {
  method: "GET" | "POST";
  /** Path and query, e.g. "/search?q=boots&page=2". */
  url: string;
  /** Form fields of a POST, in document order (a name may repeat). */
  form: readonly (readonly [string, string])[];
}

/** An app's answer. */
export type WebResponse =
  | { kind: "page"; status: number; title: string; body: string }
  | { kind: "redirect"; location: string };

/** A web application over a world: one handler for every request. */
export interface WebApp {
  /** Shown as the origin's host in URLs, e.g. "shop.llmix.test". */
  readonly host: string;
  handle(request: WebRequest): WebResponse;
}

/** Escape text for HTML content and attribute values. */
export function escapeHtml(text: string | number): string {
  return String(text).replace(/[&<>"']/g, (c) => (c === "&" ? "&amp;" : c === "<" ? "&lt;" : c === ">" ? "&gt;" : c === '"' ? "&quot;" : "&#39;"));
}

/** Marks a string as HTML already escaped, so `html` inserts it as it is. */
export class RawHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

/** Insert already-built HTML into an `html` template. */
export function raw(value: string): RawHtml {
  return new RawHtml(value);
}

type HtmlValue = string | number | RawHtml | null | undefined | false | readonly HtmlValue[];

/** A tagged template that escapes every interpolated value except RawHtml (and arrays of them). */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): RawHtml {
  let out = strings[0] ?? "";
  values.forEach((value, i) => {
    out += htmlOf(value) + (strings[i + 1] ?? "");
  });
  return new RawHtml(out);
}

function htmlOf(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return "";
  if (value instanceof RawHtml) return value.value;
  if (Array.isArray(value)) return value.map(htmlOf).join("");
  return escapeHtml(value as string | number);
}

/** A whole HTML document of a page response, the same bytes for both drivers. */
export function renderDocument(page: { title: string; body: string }): string {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(page.title)}</title></head><body>${page.body}</body></html>`;
}

/** The path and the parsed query of an in-app URL. */
export function parseAppUrl(url: string): { path: string; query: URLSearchParams } {
  const parsed = new URL(url, "http://app.invalid");
  return { path: parsed.pathname, query: parsed.searchParams };
}

/** A form's fields as a lookup of the first value of each name (all values by `getAll`). */
export class FormFields {
  constructor(private readonly entries: readonly (readonly [string, string])[]) {}
  get(name: string): string | undefined {
    return this.entries.find(([k]) => k === name)?.[1];
  }
  getAll(name: string): string[] {
    return this.entries.filter(([k]) => k === name).map(([, v]) => v);
  }
}

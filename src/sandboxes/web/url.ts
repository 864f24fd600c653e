/**
 * In-app URLs. Everything the web sandbox navigates to is a path of the one app it serves; a URL that
 * leaves it (another host, another scheme, a protocol-relative "//host", a javascript: link) is refused,
 * so no action of a policy can reach the network through a driver.
 */
import { SandboxError } from "../../core/errors.js";

const BASE = "http://app.invalid";
/** The longest URL a navigation accepts: longer ones are refused, not truncated. */
export const MAX_URL_LENGTH = 2048;

/**
 * Resolve `href` against the current in-app URL and return the in-app path and query (no fragment).
 * `host`, when given, is the app's own host, accepted in absolute URLs (`http://<host>/path`).
 */
export function resolveAppUrl(href: string, current: string, host?: string): string {
  if (typeof href !== "string" || href.length === 0) throw new SandboxError("navigation_refused", "the URL is empty");
  if (href.length > MAX_URL_LENGTH) throw new SandboxError("navigation_refused", `the URL is ${href.length} characters long; at most ${MAX_URL_LENGTH}`);
  let resolved: URL;
  try {
    const absolute = host !== undefined ? href.replace(new RegExp(`^https?://${host.replace(/[.]/g, "\\.")}(?=[/?#]|$)`, "i"), "") : href;
    resolved = new URL(absolute === "" ? "/" : absolute, new URL(current, BASE));
  } catch {
    throw new SandboxError("navigation_refused", `"${href}" is not a URL`);
  }
  if (resolved.origin !== BASE) {
    throw new SandboxError("navigation_refused", `"${href}" leaves the application: only its own pages can be opened (paths such as /search?q=...)`);
  }
  return resolved.pathname + resolved.search;
}

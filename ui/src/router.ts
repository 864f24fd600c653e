/**
 * The hash router: `#/runs`, `#/runs/<id>?filters`, `#/episodes/<id>`, `#/compare/<a>/<b>`. Ids are
 * URL-encoded in the fragment (episode ids contain "/"). The fragment never reaches the server, so
 * the page is one static file whatever is shown.
 */
import { useEffect, useState } from "preact/hooks";

/** What the address shows. */
export type Route =
  | { name: "runs" }
  | { name: "run"; runId: string; query: URLSearchParams }
  | { name: "episode"; episodeId: string }
  | { name: "compare"; a: string; b: string }
  | { name: "not_found"; hash: string };

const dec = (part: string | undefined): string => {
  try {
    return decodeURIComponent(part ?? "");
  } catch {
    return part ?? "";
  }
};

/** The route of a fragment. */
export function parseHash(hash: string): Route {
  const [path = "", search = ""] = hash.replace(/^#/, "").split("?", 2);
  const parts = path.split("/").filter((p) => p !== "");
  if (parts.length === 0 || (parts[0] === "runs" && parts.length === 1)) return { name: "runs" };
  if (parts[0] === "runs" && parts.length === 2) return { name: "run", runId: dec(parts[1]), query: new URLSearchParams(search) };
  if (parts[0] === "episodes" && parts.length === 2) return { name: "episode", episodeId: dec(parts[1]) };
  if (parts[0] === "compare" && parts.length === 3) return { name: "compare", a: dec(parts[1]), b: dec(parts[2]) };
  return { name: "not_found", hash };
}

const enc = encodeURIComponent;
/** Links to each view. */
export const links = {
  runs: () => "#/runs",
  run: (runId: string, query?: URLSearchParams) => `#/runs/${enc(runId)}${query && [...query.keys()].length > 0 ? `?${query.toString()}` : ""}`,
  episode: (episodeId: string) => `#/episodes/${enc(episodeId)}`,
  compare: (a: string, b: string) => `#/compare/${enc(a)}/${enc(b)}`,
};

/** Go to a view (a new history entry). */
export function navigate(hash: string): void {
  if (window.location.hash !== hash) window.location.hash = hash;
}

/** Change the address without a history entry (a filter change is not a page). */
export function replaceHash(hash: string): void {
  if (window.location.hash === hash) return;
  history.replaceState(null, "", hash);
  lastRunViews.set(runOf(hash), hash);
}

// The run views last shown, with their filters, so Esc from an episode returns to the list as it was.
const lastRunViews = new Map<string, string>();
const runOf = (hash: string) => {
  const route = parseHash(hash);
  return route.name === "run" ? route.runId : "";
};

/** The address of a run's view as it was last shown (its filters and page), or its plain address. */
export function lastRunView(runId: string): string {
  return lastRunViews.get(runId) ?? links.run(runId);
}

/** The current route; re-renders on every change of the fragment. */
export function useRoute(): Route {
  const [hash, setHash] = useState(window.location.hash);
  useEffect(() => {
    const onChange = () => setHash(window.location.hash);
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  const route = parseHash(hash);
  if (route.name === "run") lastRunViews.set(route.runId, hash.startsWith("#") ? hash : `#${hash}`);
  return route;
}

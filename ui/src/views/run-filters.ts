/**
 * The episode filters of a run's view, kept in the address (`#/runs/<id>?failed=1&difficulty=hard...`)
 * so a filtered list survives opening an episode and coming back, and can be linked to.
 */
import { passed, type Episode } from "../wire";

/** How the component filter compares. */
export type ComponentMode = "below_max" | "below" | "at_least";

/** Every filter of the episode table, and its page. */
export interface EpisodeFilters {
  failedOnly: boolean;
  difficulty: string;
  family: string;
  component: string;
  mode: ComponentMode;
  /** The threshold as typed (modes below / at_least). */
  threshold: string;
  page: number;
}

const MODES: readonly ComponentMode[] = ["below_max", "below", "at_least"];

/** Filters from the address's query. */
export function filtersFromQuery(query: URLSearchParams): EpisodeFilters {
  const mode = query.get("mode") as ComponentMode | null;
  const page = Number(query.get("page") ?? "1");
  return {
    failedOnly: query.get("failed") === "1",
    difficulty: query.get("difficulty") ?? "",
    family: query.get("family") ?? "",
    component: query.get("component") ?? "",
    mode: mode && MODES.includes(mode) ? mode : "below_max",
    threshold: query.get("threshold") ?? "",
    page: Number.isSafeInteger(page) && page >= 1 ? page : 1,
  };
}

/** The query that holds the filters (defaults left out). */
export function filtersToQuery(f: EpisodeFilters): URLSearchParams {
  const q = new URLSearchParams();
  if (f.failedOnly) q.set("failed", "1");
  if (f.difficulty) q.set("difficulty", f.difficulty);
  if (f.family) q.set("family", f.family);
  if (f.component) {
    q.set("component", f.component);
    if (f.mode !== "below_max") q.set("mode", f.mode);
    if (f.threshold !== "" && f.mode !== "below_max") q.set("threshold", f.threshold);
  }
  if (f.page > 1) q.set("page", String(f.page));
  return q;
}

/** The largest value each reward component reached in these episodes ("below its max" compares with it). */
export function componentMaxima(episodes: readonly Episode[]): Record<string, number> {
  const max: Record<string, number> = {};
  for (const e of episodes) for (const [name, v] of Object.entries(e.reward_components)) max[name] = Math.max(max[name] ?? -Infinity, v);
  return max;
}

/** The episodes the filters let through, in their order. */
export function applyFilters(episodes: readonly Episode[], f: EpisodeFilters, familyOf: (taskId: string) => string | null, maxima: Record<string, number>): Episode[] {
  const threshold = Number(f.threshold);
  const compares = f.component !== "" && (f.mode === "below_max" || (f.threshold.trim() !== "" && Number.isFinite(threshold)));
  return episodes.filter((e) => {
    if (f.failedOnly && passed(e)) return false;
    if (f.difficulty && e.difficulty !== f.difficulty) return false;
    if (f.family && familyOf(e.task_id) !== f.family) return false;
    if (compares) {
      const value = e.reward_components[f.component] ?? 0;
      if (f.mode === "below_max" && !(value < (maxima[f.component] ?? 0) - 1e-12)) return false;
      if (f.mode === "below" && !(value < threshold)) return false;
      if (f.mode === "at_least" && !(value >= threshold)) return false;
    }
    return true;
  });
}

/**
 * The charts of a run: success by difficulty, mean reward components, pass@k, episode lengths and
 * success over the run's course (one line per difficulty: a curriculum's shift from easy to hard
 * shows there).
 */
import { useMemo } from "preact/hooks";
import { categoryBars, Chart, colorsOf, histogram, lines, type ChartSpec } from "../charts";
import { num, pct } from "../format";
import { passed, type Episode, type SliceMetrics } from "../wire";

/** Episodes in the order they finished (ties by id, so the order is stable). */
function inFinishOrder(episodes: readonly Episode[]): Episode[] {
  return [...episodes].sort((a, b) => (a.finished_at < b.finished_at ? -1 : a.finished_at > b.finished_at ? 1 : a.episode_id < b.episode_id ? -1 : 1));
}

/** Rolling success of each difficulty over the run: x is the episode's place in finish order. */
function successOverTime(episodes: readonly Episode[], difficulties: readonly string[]): { spec: ChartSpec; window: number } {
  const ordered = inFinishOrder(episodes.filter((e) => e.status === "ok"));
  const xs = ordered.map((_e, i) => i + 1);
  const colors = colorsOf(difficulties);
  let widest = 1;
  const series = difficulties.map((d) => {
    const mine = ordered.filter((e) => e.difficulty === d).length;
    // About a fifth of the difficulty's episodes per window, between 3 and 50: smooth, yet a shift shows.
    const window = Math.max(3, Math.min(50, Math.round(mine / 5)));
    widest = Math.max(widest, window);
    const recent: number[] = [];
    const values = ordered.map((e) => {
      if (e.difficulty !== d) return null;
      recent.push(passed(e) ? 1 : 0);
      if (recent.length > window) recent.shift();
      return recent.reduce((a, b) => a + b, 0) / recent.length;
    });
    return { label: d, values, color: colors[d] as string };
  });
  return { spec: lines(xs, series, "episode (in finish order)"), window: widest };
}

/** Counts of episode lengths (steps), all and passed. */
function lengthHistogram(episodes: readonly Episode[]): ChartSpec | null {
  const ok = episodes.filter((e) => e.status === "ok");
  if (ok.length === 0) return null;
  const lo = Math.min(...ok.map((e) => e.steps));
  const hi = Math.max(...ok.map((e) => e.steps));
  const xs = Array.from({ length: hi - lo + 1 }, (_v, i) => lo + i);
  const all = xs.map((x) => ok.filter((e) => e.steps === x).length);
  const good = xs.map((x) => ok.filter((e) => e.steps === x && passed(e)).length);
  return histogram(
    xs,
    [
      { label: "episodes", values: all, color: "#6b7280", width: 0.8 },
      { label: "passed", values: good, color: "#16a34a", width: 0.45 },
    ],
    "steps",
  );
}

/** Every chart of a run. */
export function RunCharts({ metrics, episodes }: { metrics: readonly SliceMetrics[]; episodes: readonly Episode[] }) {
  const charts = useMemo(() => {
    const slices = metrics.filter((m) => m.episodes > 0 || m.difficulty === "all");
    const categories = slices.map((m) => m.difficulty);
    const colors = colorsOf(categories);
    const all = metrics.find((m) => m.difficulty === "all");
    const difficulties = categories.filter((d) => d !== "all");
    const components = Object.keys(all?.mean_components ?? {});
    const k = all?.k ?? 1;
    const overTime = successOverTime(episodes, difficulties);
    return {
      success: categoryBars(categories, [{ label: "success", values: slices.map((m) => m.success_rate), color: "#2563eb", width: 0.6 }], true),
      successSummary: slices.map((m) => `${m.difficulty} ${pct(m.success_rate)}`).join(", "),
      components: categoryBars(components, [{ label: "mean per episode", values: components.map((c) => all?.mean_components[c] ?? 0), color: "#7c3aed", width: 0.6 }], false),
      componentsSummary: components.map((c) => `${c} ${num(all?.mean_components[c] ?? 0)}`).join(", "),
      passAtK: categoryBars(
        categories,
        [
          { label: `pass@${k}`, values: slices.map((m) => m.pass_at_k), color: "#93c5fd", width: 0.7 },
          { label: `avg@${k}`, values: slices.map((m) => m.avg_at_k), color: "#3b82f6", width: 0.45 },
          { label: `pass^${k}`, values: slices.map((m) => m.pass_hat_k), color: "#1e3a8a", width: 0.2 },
        ],
        true,
      ),
      passSummary: slices.map((m) => `${m.difficulty}: pass@${k} ${pct(m.pass_at_k)}, avg@${k} ${pct(m.avg_at_k)}, pass^${k} ${pct(m.pass_hat_k)}`).join("; "),
      k,
      lengths: lengthHistogram(episodes),
      overTime,
      colors,
    };
  }, [metrics, episodes]);
  return (
    <div class="charts">
      <Chart title="Success by difficulty" summary={`Success rate: ${charts.successSummary}`} spec={charts.success} />
      <Chart title="Mean reward components (all episodes)" summary={`Mean reward components: ${charts.componentsSummary}`} spec={charts.components} />
      <Chart title={`pass@${charts.k}, avg@${charts.k} and pass^${charts.k} by difficulty`} summary={charts.passSummary} spec={charts.passAtK} />
      {charts.lengths && <Chart title="Episode length (steps)" summary="Histogram of episode lengths in steps, all episodes and those that passed" spec={charts.lengths} />}
      <Chart
        title={`Success over the run (rolling mean, window up to ${charts.overTime.window})`}
        summary="Rolling success rate of each difficulty, episodes in the order they finished"
        spec={charts.overTime.spec}
      />
    </div>
  );
}

/** #/runs/<id>: a run's metrics per difficulty, its charts, and its episodes with filters. */
import { useEffect, useMemo, useState } from "preact/hooks";
import { getAllEpisodes, getRun, getRunTasks, MAX_RUN_EPISODES } from "../api";
import { LoadError, Loading, Section } from "../components";
import { num, pct, time } from "../format";
import { useAsync } from "../hooks";
import { links, replaceHash } from "../router";
import type { SliceMetrics } from "../wire";
import { EpisodeTable } from "./EpisodeTable";
import { RunCharts } from "./run-charts";
import { applyFilters, componentMaxima, filtersFromQuery, filtersToQuery, type EpisodeFilters } from "./run-filters";

/** The metrics of each difficulty; every figure carries data-metric so tests can read it back. */
function MetricsTable({ metrics }: { metrics: readonly SliceMetrics[] }) {
  const k = metrics[0]?.k ?? 1;
  const cols: Array<{ key: keyof SliceMetrics; label: string; show: (m: SliceMetrics) => string }> = [
    { key: "episodes", label: "Episodes", show: (m) => num(m.episodes) },
    { key: "errors", label: "Errors", show: (m) => num(m.errors) },
    { key: "tasks", label: "Tasks", show: (m) => num(m.tasks) },
    { key: "success_rate", label: "Success", show: (m) => pct(m.success_rate) },
    { key: "mean_outcome", label: "Mean outcome", show: (m) => num(m.mean_outcome) },
    { key: "mean_total_reward", label: "Mean reward", show: (m) => num(m.mean_total_reward) },
    { key: "pass_at_k", label: `pass@${k}`, show: (m) => pct(m.pass_at_k) },
    { key: "pass_hat_k", label: `pass^${k}`, show: (m) => pct(m.pass_hat_k) },
    { key: "avg_at_k", label: `avg@${k}`, show: (m) => pct(m.avg_at_k) },
    { key: "mean_steps", label: "Mean steps", show: (m) => num(m.mean_steps, 1) },
    { key: "mean_tokens", label: "Mean tokens", show: (m) => num(m.mean_tokens, 0) },
    { key: "tool_error_rate", label: "Tool errors", show: (m) => pct(m.tool_error_rate) },
  ];
  return (
    <table class="data metrics" id="metrics">
      <caption class="visually-hidden">Metrics per difficulty</caption>
      <thead>
        <tr>
          <th scope="col">Difficulty</th>
          {cols.map((c) => (
            <th scope="col" class="n" key={c.key}>
              {c.label}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {metrics.map((m) => (
          <tr key={`${m.env}/${m.difficulty}`} data-difficulty={m.difficulty} class={m.difficulty === "all" ? "total" : undefined}>
            <th scope="row">{m.difficulty}</th>
            {cols.map((c) => (
              <td class="n" key={c.key} data-metric={c.key}>
                {c.show(m)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The run view. */
export function RunView({ runId, query }: { runId: string; query: URLSearchParams }) {
  const run = useAsync(() => getRun(runId), [runId]);
  const episodes = useAsync(() => getAllEpisodes(runId), [runId]);
  // Families come from the task generator, which not every service can reach: without them the filter is hidden.
  const tasks = useAsync(() => getRunTasks(runId).catch(() => null), [runId]);
  const [filters, setFilters] = useState<EpisodeFilters>(() => filtersFromQuery(query));
  useEffect(() => {
    document.title = `${runId} · LLMix inspector`;
  }, [runId]);
  const update = (change: Partial<EpisodeFilters>) => {
    const next = { ...filters, ...("page" in change ? {} : { page: 1 }), ...change };
    setFilters(next);
    replaceHash(links.run(runId, filtersToQuery(next)));
  };

  const taskInfo = tasks.data?.tasks;
  const familyOf = (taskId: string) => taskInfo?.[taskId]?.family ?? null;
  const all = episodes.data?.episodes;
  const maxima = useMemo(() => componentMaxima(all ?? []), [all]);
  const shown = useMemo(() => (all ? applyFilters(all, filters, familyOf, maxima) : []), [all, filters, taskInfo, maxima]);
  const families = useMemo(() => [...new Set(Object.values(taskInfo ?? {}).map((t) => t.family).filter((f): f is string => !!f))].sort(), [taskInfo]);

  if (run.error) return <LoadError error={run.error} />;
  if (!run.data) return <Loading what={`run ${runId}`} />;
  const r = run.data.run;
  const difficulties = run.data.metrics.filter((m) => m.difficulty !== "all").map((m) => m.difficulty);
  return (
    <>
      <h1>
        Run <span class="mono">{r.run_id}</span>
      </h1>
      <dl class="facts">
        <div>
          <dt>Environment</dt>
          <dd>
            {r.env} {r.env_version}
          </dd>
        </div>
        <div>
          <dt>Policy</dt>
          <dd>
            {r.policy}
            {r.policy_checkpoint ? ` @ ${r.policy_checkpoint}` : ""}
          </dd>
        </div>
        <div>
          <dt>Status</dt>
          <dd>
            <span class={`status status-${r.status}`}>{r.status}</span>
          </dd>
        </div>
        <div>
          <dt>Episodes</dt>
          <dd>
            {episodes.data ? episodes.data.total : "…"} of {r.planned_episodes} planned
          </dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd>{time(r.created_at)}</dd>
        </div>
        <div>
          <dt>Finished</dt>
          <dd>{time(r.finished_at)}</dd>
        </div>
        {r.tenant ? (
          <div>
            <dt>Tenant</dt>
            <dd>{r.tenant}</dd>
          </div>
        ) : null}
      </dl>
      <Section title="Metrics" id="metrics-section">
        <MetricsTable metrics={run.data.metrics} />
      </Section>
      <Section title="Charts" id="charts-section">
        {episodes.data ? <RunCharts metrics={run.data.metrics} episodes={episodes.data.episodes} /> : <Loading what="episodes" />}
      </Section>
      <Section title="Episodes" id="episodes-section">
        {episodes.error && <LoadError error={episodes.error} />}
        {episodes.data && episodes.data.total > MAX_RUN_EPISODES && (
          <p class="note">
            This run has {episodes.data.total} episodes; the first {MAX_RUN_EPISODES} are shown and charted.
          </p>
        )}
        <form class="filters" role="search" aria-label="Episode filters" onSubmit={(e) => e.preventDefault()}>
          <label>
            <input type="checkbox" data-filter checked={filters.failedOnly} onChange={(e) => update({ failedOnly: e.currentTarget.checked })} /> Failed only
          </label>
          <span>
            <label for="filter-difficulty">Difficulty</label>{" "}
            <select id="filter-difficulty" value={filters.difficulty} onChange={(e) => update({ difficulty: e.currentTarget.value })}>
              <option value="">any</option>
              {difficulties.map((d) => (
                <option key={d} value={d}>
                  {d}
                </option>
              ))}
            </select>
          </span>
          {families.length > 0 && (
            <span>
              <label for="filter-family">Family</label>{" "}
              <select id="filter-family" value={filters.family} onChange={(e) => update({ family: e.currentTarget.value })}>
                <option value="">any</option>
                {families.map((f) => (
                  <option key={f} value={f}>
                    {f}
                  </option>
                ))}
              </select>
            </span>
          )}
          <span>
            <label for="filter-component">Component</label>{" "}
            <select id="filter-component" value={filters.component} onChange={(e) => update({ component: e.currentTarget.value })}>
              <option value="">any</option>
              {Object.keys(maxima).map((c) => (
                <option key={c} value={c}>
                  {c}
                </option>
              ))}
            </select>
          </span>
          {filters.component !== "" && (
            <>
              <span>
                <label for="filter-mode">is</label>{" "}
                <select id="filter-mode" aria-label="Component comparison" value={filters.mode} onChange={(e) => update({ mode: e.currentTarget.value as EpisodeFilters["mode"] })}>
                  <option value="below_max">below its max ({num(maxima[filters.component] ?? 0)})</option>
                  <option value="below">below</option>
                  <option value="at_least">at least</option>
                </select>
              </span>
              {filters.mode !== "below_max" && (
                <label>
                  Threshold <input type="number" step="any" inputMode="decimal" size={6} value={filters.threshold} onInput={(e) => update({ threshold: e.currentTarget.value })} />
                </label>
              )}
            </>
          )}
          {episodes.data && (
            <span class="count" aria-live="polite" data-testid="match-count" data-count={shown.length}>
              {shown.length} of {episodes.data.episodes.length} episodes
            </span>
          )}
        </form>
        {episodes.loading && !episodes.data && <Loading what="episodes" />}
        {episodes.data && <EpisodeTable episodes={shown} familyOf={taskInfo ? familyOf : null} page={filters.page} onPage={(page) => update({ page })} />}
      </Section>
    </>
  );
}

/** #/runs: every run, newest first, with its success rate, filterable by text. */
import { useEffect, useState } from "preact/hooks";
import { getRun, listRuns } from "../api";
import { LoadError, Loading } from "../components";
import { pct, time } from "../format";
import { useAsync } from "../hooks";
import { links } from "../router";
import type { RunSummary } from "../wire";

/** Runs listed (each costs a metrics request for its success rate). */
const RUNS_SHOWN = 100;
/** Runs whose success rate is fetched at once (the list has counts, not metrics). */
const PARALLEL_METRICS = 4;

/** The success rate of each run, fetched a few at a time; undefined while unknown, null when it has none. */
function useSuccessRates(runs: RunSummary[] | undefined): Record<string, number | null | undefined> {
  const [rates, setRates] = useState<Record<string, number | null | undefined>>({});
  useEffect(() => {
    if (!runs) return;
    let cancelled = false;
    const queue = runs.map((r) => r.run_id);
    const worker = async () => {
      for (let id = queue.shift(); id !== undefined && !cancelled; id = queue.shift()) {
        const runId = id;
        const rate = await getRun(runId).then(
          (r) => r.metrics.find((m) => m.difficulty === "all")?.success_rate ?? null,
          () => null,
        );
        if (!cancelled) setRates((prev) => ({ ...prev, [runId]: rate }));
      }
    };
    for (let i = 0; i < PARALLEL_METRICS; i++) void worker();
    return () => {
      cancelled = true;
    };
  }, [runs]);
  return rates;
}

/** The run list. */
export function RunList() {
  const runs = useAsync(() => listRuns(RUNS_SHOWN), []);
  const [filter, setFilter] = useState("");
  const rates = useSuccessRates(runs.data?.runs);
  useEffect(() => {
    document.title = "Runs · LLMix inspector";
  }, []);
  const needle = filter.trim().toLowerCase();
  const shown = (runs.data?.runs ?? []).filter((r) => needle === "" || [r.run_id, r.env, r.policy, r.status].some((s) => s.toLowerCase().includes(needle)));
  return (
    <>
      <h1>Runs</h1>
      <div class="filters" role="search">
        <label>
          Filter <input type="search" data-filter value={filter} onInput={(e) => setFilter(e.currentTarget.value)} placeholder="run, environment, policy, status" />
        </label>
        {runs.data && (
          <span class="count" aria-live="polite">
            {shown.length} of {runs.data.runs.length} runs
          </span>
        )}
      </div>
      {runs.error && <LoadError error={runs.error} />}
      {runs.loading && !runs.data && <Loading what="runs" />}
      {runs.data && (
        <table class="data" id="runs">
          <caption class="visually-hidden">Runs, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Environment</th>
              <th scope="col">Policy</th>
              <th scope="col">Status</th>
              <th scope="col" class="n">Episodes</th>
              <th scope="col" class="n">Success</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((r) => (
              <tr key={r.run_id} data-nav-item data-run-id={r.run_id}>
                <th scope="row">
                  <a href={links.run(r.run_id)} data-nav-primary>
                    {r.run_id}
                  </a>
                </th>
                <td>
                  {r.env} <span class="muted">{r.env_version}</span>
                </td>
                <td>{r.policy}</td>
                <td>
                  <span class={`status status-${r.status}`}>{r.status}</span>
                </td>
                <td class="n" data-col="episodes">
                  {r.episodes ?? "–"}
                  {r.planned_episodes !== r.episodes && <span class="muted"> / {r.planned_episodes}</span>}
                </td>
                <td class="n" data-col="success">
                  {rates[r.run_id] === undefined ? "…" : pct(rates[r.run_id])}
                </td>
                <td>{time(r.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {runs.data && runs.data.runs.length === 0 && <p>No runs in this store yet: record one with `llmix rollout --store …`.</p>}
    </>
  );
}

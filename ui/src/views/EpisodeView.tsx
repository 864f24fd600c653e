/**
 * #/episodes/<id>: every step (observation, action, tool result, reward components, policy data), the
 * verdict with the state difference against the reference, and replay.
 */
import { useEffect, useState } from "preact/hooks";
import { getEpisode, replayEpisode } from "../api";
import { DifferenceList, JsonBlock, LoadError, Loading, Outcome, Section, stateDifferences, VerdictTree } from "../components";
import { duration, num, prettyJson, time } from "../format";
import { toggleCompareMark, useAsync, useCompareMarks } from "../hooks";
import { lastRunView, links } from "../router";
import { asVerdict, passed, type Episode, type ReplayReport, type Step } from "../wire";
import { ActionView, actionTitle, extraInfo, PolicyView, RewardView, ToolResultView } from "./step-parts";

/** One step, focusable so j/k can move through the steps. */
function StepView({ step }: { step: Step }) {
  const info = extraInfo(step);
  return (
    <article class="step" id={`step-${step.step}`} data-nav-item tabIndex={-1} aria-labelledby={`step-${step.step}-title`}>
      <h3 id={`step-${step.step}-title`}>
        Step {step.step}: <code>{actionTitle(step.action)}</code>
        {step.tool_result && <span class={`badge tool-${step.tool_result.status}`}>{step.tool_result.status}</span>}
        {step.terminated && <span class="badge">terminated</span>}
        {step.truncated && <span class="badge badge-fail">truncated</span>}
      </h3>
      <div class="step-grid">
        <section>
          <h4>Observation the policy acted on ({step.observation.tokens} tokens)</h4>
          <pre class="observation">{step.observation.rendered}</pre>
        </section>
        <section>
          <h4>Action</h4>
          <ActionView action={step.action} />
          <h4>Tool result</h4>
          <ToolResultView result={step.tool_result} />
        </section>
        <section>
          <h4>Reward</h4>
          <RewardView step={step} />
          {step.policy && (
            <>
              <h4>Policy</h4>
              <PolicyView policy={step.policy} />
            </>
          )}
          {info && (
            <details>
              <summary>More step info</summary>
              <JsonBlock value={info} />
            </details>
          )}
        </section>
      </div>
    </article>
  );
}

/** The Replay button and what the replay found. */
function ReplayPanel({ episodeId }: { episodeId: string }) {
  const [state, setState] = useState<{ running: boolean; report?: ReplayReport; error?: Error }>({ running: false });
  useEffect(() => setState({ running: false }), [episodeId]);
  const run = () => {
    setState({ running: true });
    replayEpisode(episodeId).then(
      (report) => setState({ running: false, report }),
      (error: Error) => setState({ running: false, error }),
    );
  };
  const report = state.report;
  return (
    <div class="replay">
      <button type="button" onClick={run} disabled={state.running} data-action="replay">
        {state.running ? "Replaying…" : "Replay"}
      </button>{" "}
      <span class="muted">re-runs the recorded actions on a fresh environment and compares every step</span>
      <div aria-live="polite" data-testid="replay-result">
        {state.error && <LoadError error={state.error} />}
        {report && report.matched && (
          <p class="ok">
            Replay matched: all {report.steps} steps reproduced (environment {report.env_version}
            {report.recorded_env_version !== report.env_version ? `, recorded with ${report.recorded_env_version}` : ""}).
          </p>
        )}
        {report && !report.matched && (
          <>
            <p class="error">
              Replay differs: {report.diffs.length} difference{report.diffs.length === 1 ? "" : "s"} over {report.steps} steps (replayed reward {num(report.replayed.total_reward)}, recorded {num(report.recorded.total_reward)}).
            </p>
            <table class="data">
              <thead>
                <tr>
                  <th scope="col">Step</th>
                  <th scope="col">Field</th>
                  <th scope="col">Recorded</th>
                  <th scope="col">Replayed</th>
                </tr>
              </thead>
              <tbody>
                {report.diffs.slice(0, 50).map((d, i) => (
                  <tr key={i}>
                    <td>{d.step}</td>
                    <td>{d.field}</td>
                    <td>
                      <pre class="json">{prettyJson(d.recorded)}</pre>
                    </td>
                    <td>
                      <pre class="json">{prettyJson(d.replayed)}</pre>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </>
        )}
      </div>
    </div>
  );
}

/** The episode's facts in one list. */
function EpisodeFacts({ e }: { e: Episode }) {
  const facts: Array<[string, string]> = [
    ["Task", e.task_id],
    ["Seed", String(e.seed)],
    ["Group", `${e.group_index} of ${e.group_id}`],
    ["Policy", `${e.policy}${e.policy_checkpoint ? ` @ ${e.policy_checkpoint}` : ""}`],
    ["Environment", `${e.env} ${e.env_version}`],
    ["Steps", String(e.steps)],
    ["Tokens", String(e.tokens)],
    ["Total reward", num(e.total_reward)],
    ["Outcome", num(e.outcome)],
    ["End", e.end_reason ?? "–"],
    ["Duration", duration(e.duration_ms)],
    ["Cost", `$${num(e.cost, 4)}`],
    ["Finished", time(e.finished_at)],
  ];
  return (
    <dl class="facts">
      {facts.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

/** The episode view. */
export function EpisodeView({ episodeId }: { episodeId: string }) {
  const loaded = useAsync(() => getEpisode(episodeId), [episodeId]);
  const marks = useCompareMarks();
  useEffect(() => {
    document.title = `${episodeId} · LLMix inspector`;
  }, [episodeId]);
  if (loaded.error) return <LoadError error={loaded.error} />;
  if (!loaded.data) return <Loading what={`episode ${episodeId}`} />;
  const { episode: e, steps } = loaded.data;
  const verdict = asVerdict(e.verdict);
  const differences = stateDifferences(e.verdict);
  const other = marks.find((m) => m !== e.episode_id);
  return (
    <div data-page-episode={e.episode_id} data-parent={lastRunView(e.run_id)}>
      <p class="crumbs">
        <a href={links.runs()}>Runs</a> › <a href={lastRunView(e.run_id)}>{e.run_id}</a>
      </p>
      <h1>
        Episode <span class="mono">{e.task_id}</span> <span class="muted">g{e.group_index}</span> <Outcome passed={e.status === "ok" ? passed(e) : undefined} error={e.status === "error"} />
      </h1>
      <div class="toolbar">
        <button type="button" onClick={() => toggleCompareMark(e.episode_id)} aria-pressed={marks.includes(e.episode_id)}>
          {marks.includes(e.episode_id) ? "Unmark for comparison" : "Mark for comparison"}
        </button>
        {other && (
          <a class="button" href={links.compare(other, e.episode_id)}>
            Compare with {other}
          </a>
        )}
      </div>
      <EpisodeFacts e={e} />
      {e.error && (
        <p class="error" role="alert">
          Infrastructure error <code>{e.error.code}</code>: {e.error.message}
        </p>
      )}
      <Section title="Verdict" id="verdict">
        {verdict ? (
          <>
            {differences.length > 0 && (
              <div class="state-diff" data-testid="state-difference">
                <h3>State difference against the reference</h3>
                {differences.map((d) => (
                  <div key={d.path}>
                    {d.path && <p class="muted">{d.path}</p>}
                    <DifferenceList differences={d.differences} />
                  </div>
                ))}
              </div>
            )}
            <VerdictTree name="verdict" verdict={e.verdict} />
          </>
        ) : (
          <p class="muted">No verdict: the episode did not end.</p>
        )}
        <ReplayPanel episodeId={e.episode_id} />
      </Section>
      <Section title={`Steps (${steps.length})`} id="steps">
        {steps.map((s) => (
          <StepView key={s.step} step={s} />
        ))}
      </Section>
    </div>
  );
}

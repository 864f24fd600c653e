/**
 * #/compare/<a>/<b>: two episodes side by side, step by step. A row whose actions, tool results or
 * rewards differ is highlighted, and so is each differing part, so the step where two rollouts of
 * one task parted ways is the first highlighted row.
 */
import { useEffect } from "preact/hooks";
import { getEpisode } from "../api";
import { DifferenceList, LoadError, Loading, Outcome, Section, stateDifferences, VerdictTree } from "../components";
import { canonical, num, prettyJson } from "../format";
import { useAsync } from "../hooks";
import { lastRunView, links } from "../router";
import { asVerdict, passed, type EpisodeResponse, type Step } from "../wire";
import { actionTitle } from "./step-parts";

/** What of two steps differs. */
interface StepDifference {
  action: boolean;
  result: boolean;
  reward: boolean;
  observation: boolean;
}

function differenceOf(a: Step | undefined, b: Step | undefined): StepDifference {
  if (!a || !b) return { action: true, result: true, reward: true, observation: true };
  return {
    action: canonical(a.action) !== canonical(b.action),
    result: canonical(a.tool_result?.status ?? null) !== canonical(b.tool_result?.status ?? null) || canonical(a.tool_result?.output ?? null) !== canonical(b.tool_result?.output ?? null),
    reward: canonical(a.reward_components) !== canonical(b.reward_components),
    observation: a.observation.rendered !== b.observation.rendered,
  };
}

/** One side of a compared step. */
function StepCell({ step, diff }: { step: Step | undefined; diff: StepDifference }) {
  if (!step) return <td class="absent">(no step)</td>;
  const args = step.action.type === "tool_call" ? step.action.args : step.action.type === "message" ? step.action.content : step.action.raw;
  return (
    <td>
      <div class={diff.action ? "diff" : undefined}>
        <code class="tool">{actionTitle(step.action)}</code>
        <pre class="json compact">{typeof args === "string" ? args : prettyJson(args)}</pre>
      </div>
      <div class={diff.result ? "diff" : undefined}>
        {step.tool_result ? <span class={`badge tool-${step.tool_result.status}`}>{step.tool_result.status}</span> : <span class="muted">no tool call</span>}
        {step.tool_result && <span class="muted"> {step.tool_result.latency_ms} ms</span>}
      </div>
      <div class={diff.reward ? "diff" : undefined}>
        reward {num(step.reward ?? Object.values(step.reward_components).reduce((x, y) => x + y, 0))}
        {Object.entries(step.reward_components)
          .filter(([, v]) => v !== 0)
          .map(([k, v]) => (
            <span key={k} class="muted">
              {" "}
              · {k} {num(v)}
            </span>
          ))}
      </div>
      <details class={diff.observation ? "diff" : undefined}>
        <summary>observation ({step.observation.tokens} tokens){diff.observation ? " — differs" : ""}</summary>
        <pre class="observation">{step.observation.rendered}</pre>
      </details>
    </td>
  );
}

/** The summary of one side. */
function Side({ label, data }: { label: string; data: EpisodeResponse }) {
  const e = data.episode;
  const v = asVerdict(e.verdict);
  const differences = stateDifferences(e.verdict);
  return (
    <section class="panel side" aria-label={`Episode ${label}`}>
      <h2>
        {label}: <a href={links.episode(e.episode_id)} class="mono">{e.task_id}</a> <span class="muted">g{e.group_index}</span>
      </h2>
      <p>
        <Outcome passed={e.status === "ok" ? passed(e) : undefined} error={e.status === "error"} /> score {num(typeof v?.score === "number" ? v.score : null)} · reward {num(e.total_reward)} · {e.steps} steps · {e.policy}
      </p>
      {differences.map((d) => (
        <div class="state-diff" key={d.path}>
          <p class="muted">state difference{d.path ? ` (${d.path})` : ""}</p>
          <DifferenceList differences={d.differences} />
        </div>
      ))}
      <VerdictTree name="verdict" verdict={e.verdict} />
    </section>
  );
}

/** The compare view. */
export function CompareView({ a, b }: { a: string; b: string }) {
  const loaded = useAsync(() => Promise.all([getEpisode(a), getEpisode(b)]), [a, b]);
  useEffect(() => {
    document.title = "Compare · LLMix inspector";
  }, []);
  if (loaded.error) return <LoadError error={loaded.error} />;
  if (!loaded.data) return <Loading what="both episodes" />;
  const [left, right] = loaded.data;
  const count = Math.max(left.steps.length, right.steps.length);
  const rows = Array.from({ length: count }, (_v, i) => {
    const sa = left.steps[i];
    const sb = right.steps[i];
    const diff = differenceOf(sa, sb);
    return { i, sa, sb, diff, differs: diff.action || diff.result || diff.reward };
  });
  const firstDifference = rows.find((r) => r.differs);
  const sameTask = left.episode.task_id === right.episode.task_id && left.episode.seed === right.episode.seed;
  return (
    <div data-parent={lastRunView(left.episode.run_id)}>
      <p class="crumbs">
        <a href={links.runs()}>Runs</a> › <a href={lastRunView(left.episode.run_id)}>{left.episode.run_id}</a> › compare
      </p>
      <h1>Compare two episodes</h1>
      <p data-testid="compare-summary">
        {sameTask ? "Same task and seed: the rollouts differ only by the policy's choices. " : "Different tasks or seeds. "}
        {firstDifference ? `They first differ at step ${firstDifference.i + 1}; ${rows.filter((r) => r.differs).length} of ${count} steps differ.` : `All ${count} steps are the same.`}
      </p>
      <div class="sides">
        <Side label="A" data={left} />
        <Side label="B" data={right} />
      </div>
      <Section title="Steps side by side" id="compare-steps">
        <table class="data compare" id="compare">
          <thead>
            <tr>
              <th scope="col">Step</th>
              <th scope="col">A</th>
              <th scope="col">B</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.i} data-nav-item tabIndex={-1} class={r.differs ? "differs" : undefined} data-differs={r.differs ? "true" : "false"}>
                <th scope="row">
                  {r.i + 1}
                  {r.differs && <span class="visually-hidden"> (differs)</span>}
                </th>
                <StepCell step={r.sa} diff={r.diff} />
                <StepCell step={r.sb} diff={r.diff} />
              </tr>
            ))}
          </tbody>
        </table>
      </Section>
    </div>
  );
}

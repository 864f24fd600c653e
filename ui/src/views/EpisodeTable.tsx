/** A page of episodes: one row each, a link to its view, and a box to mark it for comparison. */
import { num } from "../format";
import { clearCompareMarks, toggleCompareMark, useCompareMarks } from "../hooks";
import { links } from "../router";
import { asVerdict, passed, type Episode } from "../wire";
import { Outcome } from "../components";

/** Rows per page. */
export const PAGE_SIZE = 25;

/** The marked episodes and the button that compares them. */
export function CompareBar() {
  const marks = useCompareMarks();
  if (marks.length === 0) return <p class="compare-bar muted">Mark two episodes (box, or key c) to compare them side by side.</p>;
  return (
    <div class="compare-bar" role="region" aria-label="Episodes marked for comparison">
      <span>Marked: </span>
      {marks.map((m) => (
        <code key={m}>{m}</code>
      ))}
      {marks.length === 2 && (
        <a class="button" href={links.compare(marks[0] as string, marks[1] as string)}>
          Compare
        </a>
      )}
      <button type="button" onClick={clearCompareMarks}>
        Clear marks
      </button>
    </div>
  );
}

const toolCalls = (e: Episode) => Object.values(e.tool_calls).reduce((a, b) => a + b, 0);

/** The table of episodes, paged. */
export function EpisodeTable({ episodes, familyOf, page, onPage }: { episodes: Episode[]; familyOf: ((taskId: string) => string | null) | null; page: number; onPage: (page: number) => void }) {
  const marks = useCompareMarks();
  const pages = Math.max(1, Math.ceil(episodes.length / PAGE_SIZE));
  const current = Math.min(page, pages);
  const rows = episodes.slice((current - 1) * PAGE_SIZE, current * PAGE_SIZE);
  return (
    <>
      <CompareBar />
      <table class="data episodes" id="episodes">
        <caption class="visually-hidden">Episodes, page {current} of {pages}</caption>
        <thead>
          <tr>
            <th scope="col">
              <span class="visually-hidden">Compare</span>
            </th>
            <th scope="col">Episode</th>
            <th scope="col">Difficulty</th>
            {familyOf && <th scope="col">Family</th>}
            <th scope="col">Outcome</th>
            <th scope="col" class="n">Score</th>
            <th scope="col" class="n">Reward</th>
            <th scope="col" class="n">Steps</th>
            <th scope="col" class="n">Tokens</th>
            <th scope="col" class="n">Tool calls</th>
            <th scope="col">End</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((e) => {
            const score = asVerdict(e.verdict)?.score;
            const calls = toolCalls(e);
            return (
              <tr key={e.episode_id} data-nav-item data-episode-id={e.episode_id} class={marks.includes(e.episode_id) ? "marked" : undefined}>
                <td>
                  <input type="checkbox" aria-label={`mark ${e.episode_id} for comparison`} checked={marks.includes(e.episode_id)} onChange={() => toggleCompareMark(e.episode_id)} />
                </td>
                <th scope="row">
                  <a href={links.episode(e.episode_id)} data-nav-primary class="mono">
                    {e.task_id} <span class="muted">g{e.group_index}</span>
                  </a>
                </th>
                <td>{e.difficulty}</td>
                {familyOf && <td>{familyOf(e.task_id) ?? "–"}</td>}
                <td>
                  <Outcome passed={e.status === "ok" ? passed(e) : undefined} error={e.status === "error"} />
                </td>
                <td class="n">{num(typeof score === "number" ? score : null)}</td>
                <td class="n">{num(e.total_reward)}</td>
                <td class="n">{e.steps}</td>
                <td class="n">{e.tokens}</td>
                <td class="n">
                  {calls - (e.tool_calls.ok ?? 0) > 0 ? (
                    <span title="tool calls that did not end ok">
                      {calls} <span class="warn">({calls - (e.tool_calls.ok ?? 0)} not ok)</span>
                    </span>
                  ) : (
                    calls
                  )}
                </td>
                <td>{e.status === "error" ? (e.error?.code ?? "error") : (e.end_reason ?? "–")}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {episodes.length === 0 && <p>No episode matches these filters.</p>}
      <nav class="pager" aria-label="Episode pages">
        <button type="button" disabled={current <= 1} onClick={() => onPage(current - 1)}>
          ← Previous
        </button>
        <span>
          Page {current} of {pages}
        </span>
        <button type="button" disabled={current >= pages} onClick={() => onPage(current + 1)}>
          Next →
        </button>
      </nav>
    </>
  );
}

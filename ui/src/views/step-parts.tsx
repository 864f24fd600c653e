/** The parts of one trajectory step as the episode and compare views show them. */
import { JsonBlock } from "../components";
import { duration, num } from "../format";
import type { Step, StepAction, ToolResult } from "../wire";

/** "click", "message" or "invalid action": what the step did, in a word. */
export function actionTitle(action: StepAction): string {
  if (action.type === "tool_call") return action.tool;
  if (action.type === "message") return "message";
  return "invalid action";
}

/** The action: the tool and its arguments, the message, or the raw value of an invalid action. */
export function ActionView({ action }: { action: StepAction }) {
  if (action.type === "tool_call") {
    return (
      <div class="action">
        <p>
          tool call <code class="tool">{action.tool}</code>
          {action.call_id ? <span class="muted"> (call {action.call_id})</span> : null}
        </p>
        <JsonBlock value={action.args} label="arguments" />
      </div>
    );
  }
  if (action.type === "message") {
    return (
      <div class="action">
        <p>message</p>
        <pre class="text">{action.content}</pre>
      </div>
    );
  }
  return (
    <div class="action">
      <p class="warn">invalid action (kept as sent)</p>
      <JsonBlock value={action.raw} />
    </div>
  );
}

/** The tool result envelope: status, latency, cost, error and output. */
export function ToolResultView({ result }: { result: ToolResult | null }) {
  if (!result) return <p class="muted">no tool call</p>;
  return (
    <div class="tool-result">
      <p>
        <span class={`badge tool-${result.status}`}>{result.status}</span> <span class="latency">{duration(result.latency_ms)}</span>
        {result.cost ? <span> · cost ${num(result.cost, 4)}</span> : null}
        {result.partial ? <span class="warn"> · partial output</span> : null}
      </p>
      {result.error && (
        <p class="error-line">
          <code>{result.error.code}</code>: {result.error.message}
        </p>
      )}
      {!(result.error && result.output === result.error.message) && <JsonBlock value={result.output} label="tool output" />}
    </div>
  );
}

/** The step's reward and each component (components that are not zero stand out). */
export function RewardView({ step }: { step: Step }) {
  const total = step.reward ?? Object.values(step.reward_components).reduce((a, b) => a + b, 0);
  return (
    <table class="components">
      <caption>
        reward <strong>{num(total)}</strong>
      </caption>
      <tbody>
        {Object.entries(step.reward_components).map(([name, value]) => (
          <tr key={name} class={value !== 0 ? (value > 0 ? "positive" : "negative") : "zero"}>
            <th scope="row">{name}</th>
            <td class="n">{num(value)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** What the serving engine returned with the action (token ids, logprobs, model), summarised. */
export function PolicyView({ policy }: { policy: NonNullable<Step["policy"]> }) {
  const logprobs = policy.logprobs ?? [];
  const sum = logprobs.reduce((a, b) => a + b, 0);
  return (
    <dl class="details">
      {policy.model && (
        <div class="detail">
          <dt>model</dt>
          <dd>{policy.model}</dd>
        </div>
      )}
      <div class="detail">
        <dt>prompt tokens</dt>
        <dd>{policy.prompt_token_ids?.length ?? "–"}</dd>
      </div>
      <div class="detail">
        <dt>completion tokens</dt>
        <dd>{policy.completion_token_ids?.length ?? "–"}</dd>
      </div>
      {logprobs.length > 0 && (
        <div class="detail">
          <dt>logprobs</dt>
          <dd>
            sum {num(sum)} · mean {num(sum / logprobs.length)} · min {num(Math.min(...logprobs))}
          </dd>
        </div>
      )}
    </dl>
  );
}

/** Step info beyond what is shown elsewhere (the tool result and the verdict), or null. */
export function extraInfo(step: Step): Record<string, unknown> | null {
  const { tool_result: _t, verdict: _v, ...rest } = step.info ?? {};
  return Object.keys(rest).length > 0 ? rest : null;
}

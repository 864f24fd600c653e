import type { Action, Observation, StepResult, ToolResult, TrajectoryStepRecord } from "./contract.js";
import { parseAction } from "./action.js";
import { toJsonValue } from "./json.js";
import type { PolicyData } from "./policy.js";

/** Everything needed to write one step record. */
export interface StepRecordInput {
  episodeId: string;
  taskId: string;
  envVersion: string;
  policyCheckpoint?: string | null;
  step: number;
  /** The observation the policy acted on. */
  observation: Observation;
  /** The action as the policy sent it (kept raw when it was not a valid action). */
  action: unknown;
  result: StepResult;
  policy?: PolicyData;
}

/**
 * The trajectory record of one step (DESIGN §1). `observation` is what the policy saw when it chose
 * `action`; `tool_result`, `reward_components`, `terminated` and `truncated` are what the action caused.
 */
export function toStepRecord(input: StepRecordInput): TrajectoryStepRecord {
  const { result } = input;
  const record: TrajectoryStepRecord = {
    episode_id: input.episodeId,
    task_id: input.taskId,
    env_version: input.envVersion,
    policy_checkpoint: input.policyCheckpoint ?? null,
    step: input.step,
    observation: { rendered: input.observation.rendered, tokens: input.observation.tokens },
    // Not a valid action (malformed, not JSON, nested too deep): kept raw, as far as JSON can hold it.
    action: parseAction(input.action).success ? (input.action as Action) : { type: "invalid", raw: toJsonValue(input.action) },
    tool_result: (result.info.tool_result as ToolResult | undefined) ?? null,
    reward_components: { ...result.rewardComponents },
    terminated: result.terminated,
    truncated: result.truncated,
    reward: result.reward,
    info: result.info,
  };
  if (input.policy) record.policy = input.policy;
  return record;
}


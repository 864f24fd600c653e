import type { Action, Observation, StepResult, ToolSpec } from "./contract.js";

/** What a policy sees before choosing its next action. */
export interface PolicyTurn {
  /** 1-based index of the step about to be taken. */
  step: number;
  /** The latest observation (the reset observation on the first turn). */
  observation: Observation;
  /** Tools valid in this episode. */
  tools: readonly ToolSpec[];
  /** Earlier actions and what they produced, oldest first. */
  history: ReadonlyArray<{ action: Action; result: StepResult }>;
}

/** Extra data a policy attaches to its action (kept in the trajectory record's `policy` field). */
export interface PolicyData {
  prompt_token_ids?: number[];
  completion_token_ids?: number[];
  logprobs?: number[];
  model?: string;
}

/**
 * An action together with the policy's own data about it (token ids, logprobs). `action` is what goes to
 * `step` as it is: a model's malformed output stays malformed, so the environment answers it with an
 * invalid-action observation and the `invalid_call` component.
 */
export interface PolicyDecision {
  action: Action | Record<string, unknown>;
  policy?: PolicyData;
}

/**
 * A policy maps the episode so far to the next action, or to a decision carrying policy data.
 * Instances are per episode (they may keep state).
 */
export interface Policy {
  readonly name: string;
  act(turn: PolicyTurn): Action | PolicyDecision | Promise<Action | PolicyDecision>;
}

/** The decision of whatever `act` returned: a bare action becomes `{ action }`. */
export function toDecision(value: Action | PolicyDecision): PolicyDecision {
  // Every action has a `type`; a decision never does.
  return "type" in value ? { action: value } : value;
}

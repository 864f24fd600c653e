import type { Action, Observation, StepResult } from "./contract.js";
import type { AgentEnvironment } from "./contract.js";
import { toDecision, type Policy, type PolicyData, type PolicyTurn } from "./policy.js";

/** One transition of an episode driven by a policy. */
export interface Transition {
  /** The observation the policy acted on. */
  observation: Observation;
  /** The action as the policy sent it (possibly malformed: then the result is an invalid-action observation). */
  action: Action;
  result: StepResult;
  /** The policy's data about this action (token ids, logprobs, model), when it gave any. */
  policy?: PolicyData;
}

/** What `runPolicy` returns. */
export interface PolicyRun {
  transitions: Transition[];
  /** Sum of all step rewards. */
  totalReward: number;
  /** The last step's result (undefined if no step was taken). */
  final?: StepResult;
}

/**
 * Drive an environment that has already been reset with a policy until it terminates, truncates or
 * `maxSteps` actions were taken. The smallest complete loop; the rollout runner builds on it.
 */
export async function runPolicy(
  env: AgentEnvironment<unknown, Observation, Action>,
  policy: Policy,
  options: {
    maxSteps: number;
    initial?: Observation;
    onStep?: (t: Transition) => void;
    /** Checked before each action and before each step: true stops the loop (an abandoned episode). */
    shouldStop?: () => boolean;
  },
): Promise<PolicyRun> {
  const transitions: Transition[] = [];
  const history: Array<{ action: Action; result: StepResult }> = [];
  let observation: Observation = options.initial ?? { rendered: "", tokens: 0 };
  let totalReward = 0;
  const tools = env.tools();
  for (let step = 1; step <= options.maxSteps && !options.shouldStop?.(); step++) {
    const turn: PolicyTurn = { step, observation, tools, history };
    const decision = toDecision(await policy.act(turn));
    if (options.shouldStop?.()) break;
    // A malformed action is passed on as it is: the environment answers it, the history keeps it.
    const action = decision.action as Action;
    const result = await env.step(action);
    const transition: Transition = decision.policy ? { observation, action, result, policy: decision.policy } : { observation, action, result };
    transitions.push(transition);
    history.push({ action, result });
    options.onStep?.(transition);
    totalReward += result.reward;
    observation = result.observation;
    if (result.terminated || result.truncated) break;
  }
  return { transitions, totalReward, final: transitions.at(-1)?.result };
}

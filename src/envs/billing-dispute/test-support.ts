/** Helpers shared by the environment's tests (not part of the build: see tsconfig.json). */
import type { Action, StepResult, ToolResult } from "../../core/contract.js";
import type { VerifierResult } from "../../rewards/verifier.js";
import { BillingDispute } from "./env.js";
import type { Family, Task, Variant } from "./tasks.js";
import type { World } from "./world.js";

export const ID = (d: string, n: number) => `billing-dispute/${d}/seed-${n}`;

/** A reset environment with a forced scenario: its task, world and first observation. */
export async function open(family: Family, variant: Variant = "none", id = ID("medium", 11), seed = 3) {
  const env = new BillingDispute({ scenario: { family, variant } });
  const initial = await env.reset(id, seed);
  const task = (env as unknown as { episode: { task: Task } }).episode.task;
  const world = () => (env as unknown as { episode: { world: World } }).episode.world;
  return { env, task, world, initial };
}

/** Take every action; the episode may end only on the last one (a test that meant more steps fails loudly). */
export async function steps(env: BillingDispute, actions: Action[]): Promise<StepResult[]> {
  const out: StepResult[] = [];
  for (const [i, a] of actions.entries()) {
    const r = await env.step(a);
    out.push(r);
    if ((r.terminated || r.truncated) && i < actions.length - 1) throw new Error(`episode ended early, at action ${i + 1} of ${actions.length}: ${r.observation.rendered}`);
  }
  return out;
}

export const tool = (name: string, args: Record<string, unknown>): Action => ({ type: "tool_call", tool: name, args });
export const say = (content: string): Action => ({ type: "message", content });
export const resultOf = (r: StepResult) => r.info.tool_result as ToolResult;
export const verdictOf = (r: StepResult) => r.info.verdict as VerifierResult;

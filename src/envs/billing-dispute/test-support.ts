/** Helpers shared by the environment's tests (not part of the build: see tsconfig.json). */
import type { Action, StepResult, ToolResult } from "../../core/contract.js";
import type { VerifierResult } from "../../rewards/verifier.js";
import { BillingDispute } from "./env.js";
import type { Family, ScenarioOptions, Task, Variant } from "./tasks.js";
import type { World } from "./world.js";

export const ID = (d: string, n: number) => `billing-dispute/${d}/seed-${n}`;

/** One recent charge, nothing returned, a tier whose cap is above it: the error families' plain refund. */
const PLAIN = { window: "refund", prior: "none", charges: 1, interval: "month", tier: 3 } as const satisfies ScenarioOptions;

/**
 * Scenarios the tests name: the error families pinned to their plain refund, the remedies of the
 * families 1.2.0 had (outside-window: a credit; above-cap: an escalation), a duplicate already refunded in
 * full, and the other families as drawn.
 */
export const SCENARIOS: Record<Family | "outside-window" | "above-cap" | "already-refunded", ScenarioOptions> = {
  "duplicate-charge": { family: "duplicate-charge", ...PLAIN },
  "partial-refund": { family: "partial-refund", ...PLAIN },
  "charge-after-cancellation": { family: "charge-after-cancellation", ...PLAIN },
  "outside-window": { family: "duplicate-charge", ...PLAIN, window: "credit" },
  // Every annual plan is above the tier 1 cap.
  "above-cap": { family: "duplicate-charge", ...PLAIN, interval: "year", tier: 1 },
  "already-refunded": { family: "duplicate-charge", ...PLAIN, prior: "full" },
  "chargeback-filed": { family: "chargeback-filed" },
  "forgotten-renewal": { family: "forgotten-renewal" },
  "failed-verification": { family: "failed-verification" },
};
export type ScenarioName = keyof typeof SCENARIOS;

/** A reset environment with a named scenario (SCENARIOS) and a variant: its task, world and first observation. */
export async function open(name: ScenarioName, variant: Variant = "none", id = ID("medium", 11), seed = 3) {
  const env = new BillingDispute({ scenario: { ...SCENARIOS[name], variant } });
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

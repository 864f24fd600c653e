/**
 * A step after the end names how the episode ended and its outcome, in words that name no API (each
 * surface adds what its client can do: MCP says so in src/server/mcp-results.ts) — also after the ended
 * episode was snapshotted and restored elsewhere (a parked or rebuilt session), where the outcome is
 * scored again rather than remembered.
 */
import { describe, expect, it } from "vitest";
import { LifecycleError } from "../../src/core/errors.js";
import { runPolicy } from "../../src/core/run-policy.js";
import { builtinRegistry } from "../../src/envs/index.js";
import { rejection } from "../helpers.js";

const TASK = "billing-dispute/medium/seed-1212698690";
const SEED = 1134528888;
const registry = builtinRegistry();

/** A billing-dispute episode the reference solved (outcome 1), ended. */
async function solved(options = {}) {
  const env = registry.get("billing-dispute").create(options);
  const initial = await env.reset(TASK, SEED);
  const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
  const last = run.transitions.at(-1)!.result;
  expect(last.terminated).toBe(true);
  expect(last.rewardComponents.task).toBe(1);
  return env;
}

const ENDED = "The episode has ended (terminated: customer_satisfied; outcome 1); this action was not applied. Start a new episode to go on.";

describe("a step after the end", () => {
  it("says how the episode ended and its outcome, and never to call reset", async () => {
    const env = await solved();
    const again = await env.step({ type: "tool_call", tool: "get_agent_profile", args: {} });
    expect(again.observation.rendered).toBe(ENDED);
    expect(again.info).toMatchObject({ error: { code: "episode_ended", message: ENDED }, end_reason: "customer_satisfied", outcome: 1 });
    expect(again.rewardComponents.task).toBe(0);
    await env.close();
  });

  it("names the outcome after a restore of the ended snapshot too (scored again, not remembered)", async () => {
    const env = await solved();
    const snapshot = await env.snapshot();
    await env.close();
    const other = registry.get("billing-dispute").create();
    await other.restore(snapshot);
    const again = await other.step({ type: "message", content: "Anything else?" });
    expect(again.observation.rendered).toBe(ENDED);
    expect(again.info.outcome).toBe(1);
    // Nothing changed: the refused step is not in the snapshot.
    expect(await other.snapshot()).toEqual(snapshot);
    await other.close();
  });

  it("with strictLifecycle, throws episode_ended with the same words and the outcome in its details", async () => {
    const env = await solved({ strictLifecycle: true });
    const error = await rejection(env.step({ type: "message", content: "again" }));
    expect(error).toBeInstanceOf(LifecycleError);
    expect(error.message).toBe(ENDED);
    expect(error.details).toEqual({ status: "terminated", end_reason: "customer_satisfied", outcome: 1 });
    await env.close();
  });

  it("without scoring, has no outcome to name", async () => {
    const env = registry.get("billing-dispute").create({ scoring: false });
    await env.reset(TASK, SEED);
    await env.step({ type: "tool_call", tool: "end_conversation", args: {} });
    const again = await env.step({ type: "tool_call", tool: "end_conversation", args: {} });
    expect(again.observation.rendered).toBe("The episode has ended (terminated: agent_ended_conversation); this action was not applied. Start a new episode to go on.");
    expect(again.info.outcome).toBeNull();
    await env.close();
  });
});

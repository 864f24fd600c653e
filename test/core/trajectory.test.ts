import { describe, expect, it } from "vitest";
import { runPolicy, toStepRecord, type Action, type Policy, type StepResult, type TrajectoryStepRecord } from "../../src/index.js";
import { TinyEnv } from "../fixtures/tiny-env.js";

const RECORD_KEYS = [
  "action", "env_version", "episode_id", "info", "observation", "policy_checkpoint", "reward",
  "reward_components", "step", "task_id", "terminated", "tool_result", "truncated",
];

describe("toStepRecord", () => {
  it("writes the snake_case record of DESIGN §1 for a tool call", async () => {
    const env = new TinyEnv();
    const obs = await env.reset("tiny/easy/seed-1", 1);
    const action: Action = { type: "tool_call", tool: "add", args: { amount: 2 } };
    const result = await env.step(action);
    const record = toStepRecord({ episodeId: "ep_1", taskId: "tiny/easy/seed-1", envVersion: "1.0.0", step: 1, observation: obs, action, result });
    expect(Object.keys(record).sort()).toEqual(RECORD_KEYS);
    expect(record).toMatchObject({
      episode_id: "ep_1",
      task_id: "tiny/easy/seed-1",
      env_version: "1.0.0",
      policy_checkpoint: null,
      step: 1,
      observation: { rendered: obs.rendered, tokens: obs.tokens },
      action,
      tool_result: { status: "ok", latency_ms: 100, cost: 0.02 },
      terminated: false,
      truncated: false,
      reward: result.reward,
    });
    // the observation keeps only rendered and tokens
    expect(Object.keys(record.observation).sort()).toEqual(["rendered", "tokens"]);
    // reward_components is a copy
    record.reward_components.task = 99;
    expect(result.rewardComponents.task).toBe(0);
    expect(JSON.parse(JSON.stringify(record))).toEqual(record);
  });

  it("message steps have tool_result null; policy data and checkpoint are kept", async () => {
    const env = new TinyEnv();
    const obs = await env.reset("tiny/easy/seed-1", 1);
    const action: Action = { type: "message", content: "DONE" };
    const result = await env.step(action);
    const policy = { model: "m", completion_token_ids: [1, 2], logprobs: [-0.1, -0.2] };
    const record = toStepRecord({ episodeId: "e", taskId: "t", envVersion: "1.0.0", policyCheckpoint: "step_01800", step: 1, observation: obs, action, result, policy });
    expect(record.tool_result).toBeNull();
    expect(record.policy_checkpoint).toBe("step_01800");
    expect(record.policy).toEqual(policy);
    expect(record.terminated).toBe(true);
  });

  it.each([
    ["null", null, null],
    ["an object without type", { foo: 1 }, { foo: 1 }],
    ["a tool_call without a tool name", { type: "tool_call", args: {} }, { type: "tool_call", args: {} }],
    ["a BigInt", 1n, "1"],
  ])("keeps an invalid action (%s) raw", async (_name, raw, expected) => {
    const env = new TinyEnv();
    const obs = await env.reset("tiny/easy/seed-1", 1);
    const result = await env.step((typeof raw === "bigint" ? null : raw) as Action);
    const record = toStepRecord({ episodeId: "e", taskId: "t", envVersion: "1", step: 1, observation: obs, action: raw, result });
    expect(record.action).toEqual({ type: "invalid", raw: expected });
  });
});

describe("runPolicy", () => {
  it("stops at termination and passes history and tools to the policy", async () => {
    const env = new TinyEnv();
    const initial = await env.reset("tiny/easy/seed-1", 1);
    const turns: Array<{ step: number; history: number; tools: number; rendered: string }> = [];
    const policy: Policy = {
      name: "scripted",
      act: (turn) => {
        turns.push({ step: turn.step, history: turn.history.length, tools: turn.tools.length, rendered: turn.observation.rendered });
        return turn.step < 3 ? { type: "tool_call", tool: "peek", args: {} } : { type: "message", content: "DONE" };
      },
    };
    const seen: StepResult[] = [];
    const run = await runPolicy(env, policy, { maxSteps: 10, initial, onStep: (t) => seen.push(t.result) });
    expect(run.transitions).toHaveLength(3);
    expect(turns.map((t) => [t.step, t.history, t.tools])).toEqual([[1, 0, 4], [2, 1, 4], [3, 2, 4]]);
    expect(turns[0]!.rendered).toBe(initial.rendered);
    expect(turns[1]!.rendered).toBe(run.transitions[0]!.result.observation.rendered);
    expect(run.final).toBe(run.transitions[2]!.result);
    expect(run.final?.terminated).toBe(true);
    expect(seen).toHaveLength(3);
    expect(run.totalReward).toBeCloseTo(seen.reduce((a, r) => a + r.reward, 0), 12);
  });

  it("stops after maxSteps actions even if the episode goes on", async () => {
    const env = new TinyEnv();
    await env.reset("tiny/easy/seed-1", 1);
    const run = await runPolicy(env, { name: "chatty", act: () => ({ type: "message", content: "hi" }) }, { maxSteps: 2 });
    expect(run.transitions).toHaveLength(2);
    expect(run.final?.terminated || run.final?.truncated).toBe(false);
    expect(run.transitions[0]!.observation).toEqual({ rendered: "", tokens: 0 });
  });

  it("maxSteps 0 takes no step", async () => {
    const env = new TinyEnv();
    await env.reset("tiny/easy/seed-1", 1);
    const run = await runPolicy(env, { name: "x", act: () => ({ type: "message", content: "hi" }) }, { maxSteps: 0 });
    expect(run).toEqual({ transitions: [], totalReward: 0, final: undefined });
  });

  it("records are well-formed for a whole reference episode", async () => {
    const env = new TinyEnv();
    const initial = await env.reset("tiny/hard/seed-5", 3);
    const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
    const records: TrajectoryStepRecord[] = run.transitions.map((t, i) =>
      toStepRecord({ episodeId: "e", taskId: "tiny/hard/seed-5", envVersion: "1.0.0", step: i + 1, observation: t.observation, action: t.action, result: t.result }),
    );
    expect(records.at(-1)?.terminated).toBe(true);
    expect(records.at(-1)?.reward_components.task).toBe(1);
    for (const r of records) expect(Object.keys(r).sort()).toEqual(RECORD_KEYS);
  });
});

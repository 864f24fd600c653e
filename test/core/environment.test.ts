import { afterEach, describe, expect, it } from "vitest";
import {
  type AnyEnvironment,
  DEFAULT_PROCESS_REWARDS,
  LifecycleError,
  LlmixError,
  ValidationError,
  approximateTokenizer,
  canonicalJson,
  getDefaultTokenizer,
  o200kTokenizer,
  runPolicy,
  setDefaultTokenizer,
  type Action,
  type EnvironmentSnapshot,
  type JsonValue,
  type StepResult,
  type Tokenizer,
  type ToolResult,
} from "../../src/index.js";
import { addTool, explodeTool, peekTool, TinyEnv, TinyEnvV2, type TinyWorld } from "../fixtures/tiny-env.js";
import { InventoryRestock } from "../../examples/inventory-restock.js";

const ID = "tiny/easy/seed-1";

async function started(options: ConstructorParameters<typeof TinyEnv>[0] = {}, taskId = ID, seed = 7): Promise<TinyEnv> {
  const env = new TinyEnv(options);
  await env.reset(taskId, seed);
  return env;
}

async function rejection(promise: Promise<unknown> | (() => unknown)): Promise<LlmixError> {
  try {
    await (typeof promise === "function" ? promise() : promise);
  } catch (error) {
    expect(error).toBeInstanceOf(LlmixError);
    return error as LlmixError;
  }
  throw new Error("expected a rejection");
}

function sum(components: Record<string, number>): number {
  return Object.values(components).reduce((a, b) => a + b, 0);
}

function toolResult(r: StepResult): ToolResult {
  return r.info.tool_result as ToolResult;
}

/** Checks the per-step contract: reward = sum, every declared component present, never both ends. */
function checkStep(env: AnyEnvironment, r: StepResult): void {
  expect(Object.keys(r.rewardComponents).sort()).toEqual(Object.keys(env.componentBounds()).sort());
  expect(r.reward).toBeCloseTo(sum(r.rewardComponents), 12);
  expect(r.terminated && r.truncated).toBe(false);
  for (const [name, value] of Object.entries(r.rewardComponents)) {
    const bounds = env.componentBounds()[name]!;
    expect(value).toBeGreaterThanOrEqual(bounds.min - 1e-12);
    expect(value).toBeLessThanOrEqual(bounds.max + 1e-12);
  }
  expect(typeof r.observation.rendered).toBe("string");
  expect(Number.isInteger(r.observation.tokens)).toBe(true);
}

describe("lifecycle", () => {
  it("step, snapshot and tools before reset throw episode_not_started", async () => {
    const env = new TinyEnv();
    const e1 = await rejection(env.step({ type: "message", content: "hi" }));
    expect(e1).toBeInstanceOf(LifecycleError);
    expect(e1.code).toBe("episode_not_started");
    expect((await rejection(env.snapshot())).code).toBe("episode_not_started");
    expect((await rejection(() => env.tools())).code).toBe("episode_not_started");
  });

  it("a step after termination is answered with an episode_ended error observation and changes nothing", async () => {
    const env = await started();
    const r = await env.step({ type: "message", content: "DONE" });
    expect(r.terminated).toBe(true);
    expect(r.info.end_reason).toBe("final_answer");
    const before = await env.snapshot();
    const again = await env.step({ type: "message", content: "again" });
    expect(again.info.error).toMatchObject({ code: "episode_ended" });
    // How it ended and its outcome, in words that name no API (each surface says what its client can do).
    expect(again.observation.rendered).toBe(`The episode has ended (terminated: final_answer; outcome ${r.rewardComponents.task}); this action was not applied. Start a new episode to go on.`);
    expect(again.info.outcome).toBe(r.rewardComponents.task);
    expect(again.observation.source).toBe("error");
    expect(again.terminated).toBe(true);
    expect(again.truncated).toBe(false);
    expect(again.rewardComponents.invalid_call).toBeLessThan(0);
    expect(again.rewardComponents.task).toBe(0);
    expect(again.reward).toBe(Object.values(again.rewardComponents).reduce((a, b) => a + b, 0));
    // the refused step did not count
    expect(await env.snapshot()).toEqual(before);
    expect((await env.snapshot()).step).toBe(1);
  });

  it("with strictLifecycle a step after the end throws episode_ended", async () => {
    const env = await started({ strictLifecycle: true });
    await env.step({ type: "message", content: "DONE" });
    const error = await rejection(env.step({ type: "message", content: "again" }));
    expect(error).toBeInstanceOf(LifecycleError);
    expect(error.code).toBe("episode_ended");
    expect(error.details).toMatchObject({ status: "terminated", end_reason: "final_answer" });
    expect(error.message).toContain("this action was not applied");
  });

  it("a step after truncation is answered, not applied", async () => {
    const env = await started({ maxSteps: 1 });
    expect((await env.step({ type: "message", content: "hi" })).truncated).toBe(true);
    const again = await env.step({ type: "message", content: "hi" });
    expect(again.info.error).toMatchObject({ code: "episode_ended" });
    expect(again.truncated).toBe(true);
    expect(again.terminated).toBe(false);
  });

  it("everything after close throws environment_closed", async () => {
    const env = await started();
    const snap = await env.snapshot();
    await env.close();
    for (const call of [
      () => env.step({ type: "message", content: "hi" }),
      () => env.reset(ID, 1),
      () => env.snapshot(),
      () => env.restore(snap),
      () => env.tools(),
    ]) {
      const error = await rejection(call);
      expect(error).toBeInstanceOf(LifecycleError);
      expect(error.code).toBe("environment_closed");
    }
    await expect(env.close()).resolves.toBeUndefined();
  });

  it("closing before any reset is fine and still closes", async () => {
    const env = new TinyEnv();
    await env.close();
    expect((await rejection(env.reset(ID, 1))).code).toBe("environment_closed");
  });

  it("reset after the end starts over", async () => {
    const env = await started();
    await env.step({ type: "message", content: "DONE" });
    const obs = await env.reset(ID, 7);
    expect(obs.source).toBe("task");
    const r = await env.step({ type: "message", content: "hello" });
    expect(r.terminated).toBe(false);
  });
});

/** TinyEnv with its reference views callable from a test, counting the instances made (peers included). */
class ReferenceProbe extends TinyEnv {
  static instances = 0;
  constructor(options: ConstructorParameters<typeof TinyEnv>[0] = {}) {
    super(options);
    ReferenceProbe.instances++;
  }
  world(): Promise<JsonValue> {
    return this.referenceWorld();
  }
  view<T extends JsonValue>(fn: (world: TinyWorld) => T): Promise<T> {
    return this.referenceView(fn);
  }
}

describe("reference world", () => {
  it("replays the reference once per view, class, options, task and seed, shared by instances, and hands out copies", async () => {
    const env = new ReferenceProbe();
    await env.reset(ID, 7);
    const target = (await env.world()) as { counter: number };
    const counterOf = (world: TinyWorld) => ({ counter: world.counter, log: [...world.log] });
    const before = ReferenceProbe.instances;
    const first = await env.view(counterOf);
    expect(first.counter).toBe(target.counter);
    expect(ReferenceProbe.instances).toBe(before + 1);
    first.log.push("tampered");
    const again = await env.view(counterOf);
    expect(again.log).not.toContain("tampered");
    expect(ReferenceProbe.instances).toBe(before + 1);

    // Another instance with the same options (a GRPO group's next session): no replay.
    const sibling = new ReferenceProbe();
    await sibling.reset(ID, 7);
    expect(await sibling.view(counterOf)).toEqual({ counter: target.counter, log: again.log });
    expect(await sibling.world()).toEqual(target);
    expect(ReferenceProbe.instances).toBe(before + 2);

    // Another view, seed or option, or another tokenizer, replays.
    // (Each new ReferenceProbe below counts itself, and its replay's peer counts one more.)
    await env.view((world) => world.counter);
    expect(ReferenceProbe.instances).toBe(before + 3);
    await env.reset(ID, 8);
    await env.view(counterOf);
    expect(ReferenceProbe.instances).toBe(before + 4);
    const tight = new ReferenceProbe({ maxSteps: 3 });
    await tight.reset(ID, 8);
    await tight.view(counterOf);
    expect(ReferenceProbe.instances).toBe(before + 6);
    const chars = new ReferenceProbe({ tokenizer: approximateTokenizer });
    await chars.reset(ID, 8);
    await chars.view(counterOf);
    expect(ReferenceProbe.instances).toBe(before + 8);

    // Concurrent episodes of one group wait for one replay.
    const group = Array.from({ length: 4 }, () => new ReferenceProbe());
    await Promise.all(group.map((e) => e.reset(ID, 9)));
    const counted = ReferenceProbe.instances;
    const views = await Promise.all(group.map((e) => e.view(counterOf)));
    expect(new Set(views.map((v) => JSON.stringify(v))).size).toBe(1);
    expect(ReferenceProbe.instances).toBe(counted + 1);
  });
});

describe("truncation and termination", () => {
  it("truncates exactly at maxSteps with terminated=false and scores the outcome", async () => {
    const env = await started({ maxSteps: 3 });
    for (let i = 1; i <= 2; i++) {
      const r = await env.step({ type: "message", content: `step ${i}` });
      expect(r.truncated).toBe(false);
      expect(r.terminated).toBe(false);
      expect(r.info.end_reason).toBeUndefined();
      expect(r.rewardComponents.task).toBe(0);
      checkStep(env, r);
    }
    expect(env.evaluations).toBe(0);
    const last = await env.step({ type: "message", content: "step 3" });
    expect(last.truncated).toBe(true);
    expect(last.terminated).toBe(false);
    expect(last.info.end_reason).toBe("max_steps");
    expect(last.info.verdict).toMatchObject({ score: 0, passed: false });
    expect(env.evaluations).toBe(1);
    checkStep(env, last);
    const snap = await env.snapshot();
    expect(snap.status).toBe("truncated");
    expect(snap.end_reason).toBe("max_steps");
  });

  it("terminating on the last allowed step gives truncated=false", async () => {
    const env = await started({ maxSteps: 2 });
    await env.step({ type: "message", content: "hi" });
    const r = await env.step({ type: "message", content: "DONE" });
    expect(r.terminated).toBe(true);
    expect(r.truncated).toBe(false);
    expect(r.info.end_reason).toBe("final_answer");
  });

  it("a tool can end the episode through ctx.end, also on the last step", async () => {
    const env = await started({ maxSteps: 1 });
    const r = await env.step({ type: "tool_call", tool: "finish", args: {} });
    expect(r.terminated).toBe(true);
    expect(r.truncated).toBe(false);
    expect(r.info.end_reason).toBe("finished_by_tool");
  });

  it("uses info.maxSteps unless overridden", () => {
    expect(new TinyEnv().maxSteps).toBe(10);
    expect(new TinyEnv({ maxSteps: 4 }).maxSteps).toBe(4);
  });

  it.each([
    ["maxSteps", Number.NaN],
    ["maxSteps", -1],
    ["maxSteps", 0],
    ["maxSteps", 1.5],
    ["maxTokens", 0],
    ["maxTokens", Number.POSITIVE_INFINITY],
    ["realLatencyScale", -1],
    ["realLatencyScale", Number.NaN],
  ])("rejects options.%s = %s with invalid_config", async (key, value) => {
    const error = await rejection(() => new TinyEnv({ [key]: value }));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.code).toBe("invalid_config");
  });
});

describe("token budget", () => {
  const chars: Tokenizer = { name: "chars", count: (text) => text.length };

  it("counts the first observation and every step's observation into the snapshot", async () => {
    const env = new TinyEnv({ tokenizer: chars });
    const obs = await env.reset(ID, 1);
    expect((await env.snapshot()).tokens).toBe(obs.tokens);
    const r = await env.step({ type: "message", content: "hi" });
    expect((await env.snapshot()).tokens).toBe(obs.tokens + r.observation.tokens);
  });

  it("truncates with end_reason token_budget once the total exceeds maxTokens", async () => {
    const env = new TinyEnv({ tokenizer: chars, maxTokens: 200 });
    const obs = await env.reset(ID, 1);
    let total = obs.tokens;
    let last: StepResult | undefined;
    for (let i = 0; i < 10; i++) {
      last = await env.step({ type: "message", content: "keep going" });
      total += last.observation.tokens;
      checkStep(env, last);
      if (last.truncated) break;
      expect(total).toBeLessThanOrEqual(200);
    }
    expect(last?.truncated).toBe(true);
    expect(last?.terminated).toBe(false);
    expect(last?.info.end_reason).toBe("token_budget");
    expect(total).toBeGreaterThan(200);
  });

  it("a budget that is exactly met does not truncate", async () => {
    const probe = new TinyEnv({ tokenizer: chars });
    const first = await probe.reset(ID, 1);
    const step = await probe.step({ type: "message", content: "x" });
    const env = new TinyEnv({ tokenizer: chars, maxTokens: first.tokens + step.observation.tokens });
    await env.reset(ID, 1);
    expect((await env.step({ type: "message", content: "x" })).truncated).toBe(false);
    expect((await env.step({ type: "message", content: "x" })).truncated).toBe(true);
  });

  it("max_steps wins when both budgets end on the same step", async () => {
    const env = new TinyEnv({ tokenizer: chars, maxTokens: 1, maxSteps: 1 });
    await env.reset(ID, 1);
    const r = await env.step({ type: "message", content: "x" });
    expect(r.truncated).toBe(true);
    expect(r.info.end_reason).toBe("max_steps");
  });
});

describe("reward components", () => {
  it("the reference solver solves the task; every step's reward is the sum of all declared components", async () => {
    for (const id of ["tiny/easy/seed-1", "tiny/easy/seed-2", "tiny/hard/seed-3"]) {
      const env = new TinyEnv();
      const initial = await env.reset(id, 11);
      const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
      for (const t of run.transitions) checkStep(env, t.result);
      expect(run.final?.terminated).toBe(true);
      expect(run.final?.rewardComponents.task).toBe(1);
      expect(run.totalReward).toBeCloseTo(run.transitions.reduce((a, t) => a + t.result.reward, 0), 12);
    }
  });

  it("declares task, the standard process components and the env's own", () => {
    const bounds = new TinyEnv().componentBounds();
    expect(Object.keys(bounds).sort()).toEqual(["denied_call", "invalid_call", "shouting", "step_cost", "task", "tool_cost"]);
    expect(bounds.task).toMatchObject({ min: 0, max: 1 });
    expect(bounds.tool_cost).toMatchObject({ min: -1, max: 0 });
  });

  it("step_cost is charged on every step", async () => {
    const env = await started();
    const r = await env.step({ type: "message", content: "hi" });
    expect(r.rewardComponents.step_cost).toBe(DEFAULT_PROCESS_REWARDS.stepCost);
    expect(r.reward).toBeCloseTo(DEFAULT_PROCESS_REWARDS.stepCost, 12);
  });

  it("tool cost becomes a negative tool_cost component, weighted", async () => {
    const env = await started();
    const r = await env.step({ type: "tool_call", tool: "add", args: { amount: 5 } });
    expect(toolResult(r)).toMatchObject({ status: "ok", cost: 0.05, latency_ms: 100 });
    expect(r.rewardComponents.tool_cost).toBeCloseTo(-0.05, 12);
    checkStep(env, r);
    const weighted = await started({ processRewards: { toolCostWeight: 2, stepCost: 0 } });
    const w = await weighted.step({ type: "tool_call", tool: "add", args: { amount: 5 } });
    expect(w.rewardComponents.tool_cost).toBeCloseTo(-0.1, 12);
    expect(w.rewardComponents.step_cost).toBe(0);
    expect(w.reward).toBeCloseTo(-0.1, 12);
  });

  it("a denied permission gives denied_call and does not run the tool", async () => {
    const env = await started({}, "tiny/locked/seed-1");
    const r = await env.step({ type: "tool_call", tool: "add", args: { amount: 1 } });
    expect(toolResult(r).status).toBe("denied");
    expect(toolResult(r).error?.code).toBe("permission_denied");
    expect(r.rewardComponents.denied_call).toBe(DEFAULT_PROCESS_REWARDS.deniedCall);
    expect(r.rewardComponents.invalid_call).toBe(0);
    expect(r.rewardComponents.tool_cost === 0).toBe(true);
    expect(r.observation.rendered).toContain("counter:write");
    expect(((await env.snapshot()).world as { counter: number }).counter).toBe(0);
    checkStep(env, r);
  });

  it("an authorize refusal gives denied_call with the reason", async () => {
    const env = await started();
    const r = await env.step({ type: "tool_call", tool: "add", args: { amount: 11 } });
    expect(toolResult(r).status).toBe("denied");
    expect(r.observation.rendered).toContain("exceeds the cap of 10");
    expect(r.rewardComponents.denied_call).toBe(-0.1);
    expect(((await env.snapshot()).world as { counter: number }).counter).toBe(0);
  });

  it("an env-declared component can be emitted by the message handler", async () => {
    const env = await started();
    const r = await env.step({ type: "message", content: "hurry up!!!" });
    expect(r.rewardComponents.shouting).toBe(-0.5);
    expect(r.observation.rendered).toBe("Please do not shout.");
    checkStep(env, r);
  });

  it("tool domain errors and crashes are error results, not exceptions", async () => {
    const env = await started();
    const domain = await env.step({ type: "tool_call", tool: "explode", args: { kind: "domain" } });
    expect(toolResult(domain)).toMatchObject({ status: "error", error: { code: "tool_failed", message: "the counter is jammed" } });
    expect(domain.observation.rendered).toBe("[explode error] the counter is jammed");
    expect(domain.rewardComponents.invalid_call).toBe(0);
    const crash = await env.step({ type: "tool_call", tool: "explode", args: { kind: "crash" } });
    expect(toolResult(crash).status).toBe("error");
    expect(toolResult(crash).error?.code).toBe("tool_crashed");
    expect(crash.observation.rendered).toContain("kaboom");
  });
});

describe("invalid actions never throw", () => {
  const cases: Array<[string, unknown]> = [
    ["null", null],
    ["undefined", undefined],
    ["a string", "peek"],
    ["a number", 42],
    ["an array", [{ type: "message", content: "hi" }]],
    ["{}", {}],
    ["unknown type", { type: "x" }],
    ["tool_call without args", { type: "tool_call", tool: "peek" }],
    ["tool_call with array args", { type: "tool_call", tool: "peek", args: [] }],
    ["tool_call with null args", { type: "tool_call", tool: "peek", args: null }],
    ["tool_call with string args", { type: "tool_call", tool: "peek", args: "{}" }],
    ["tool_call with empty tool name", { type: "tool_call", tool: "", args: {} }],
    ["tool_call with huge tool name", { type: "tool_call", tool: "p".repeat(129), args: {} }],
    ["tool_call with numeric call_id", { type: "tool_call", tool: "peek", args: {}, call_id: 5 }],
    ["message without content", { type: "message" }],
    ["message with numeric content", { type: "message", content: 5 }],
    ["message with huge content", { type: "message", content: "x".repeat(200_001) }],
  ];

  it.each(cases)("%s gives an error observation with invalid_call", async (_name, action) => {
    const env = await started();
    const r = await env.step(action as Action);
    expect(r.observation.source).toBe("error");
    expect(r.observation.rendered).toMatch(/^Invalid action: /);
    expect(r.rewardComponents.invalid_call).toBe(DEFAULT_PROCESS_REWARDS.invalidCall);
    expect(r.terminated).toBe(false);
    expect(r.truncated).toBe(false);
    expect(r.info.error).toMatchObject({ code: "invalid_action" });
    checkStep(env, r);
    // the invalid action counted as a step, and nothing was called
    const snap = await env.snapshot();
    expect(snap.step).toBe(1);
    expect(snap.calls).toEqual([]);
    expect(snap.messages).toEqual([]);
  });

  it("the error message names the offending path", async () => {
    const env = await started();
    const r = await env.step({ type: "tool_call", tool: "peek", args: [] } as unknown as Action);
    expect(r.observation.rendered).toContain("action.args");
  });

  it("a message of exactly 200000 characters is accepted", async () => {
    const env = await started({ tokenizer: approximateTokenizer });
    const r = await env.step({ type: "message", content: "x".repeat(200_000) });
    expect(r.observation.source).toBe("user");
    expect(r.rewardComponents.invalid_call).toBe(0);
  });

  it("an unknown tool is invalid and lists the valid tools", async () => {
    const env = await started();
    const r = await env.step({ type: "tool_call", tool: "launch_rockets", args: {} });
    expect(toolResult(r).status).toBe("invalid");
    expect(toolResult(r).error?.code).toBe("unknown_tool");
    expect(r.observation.rendered).toContain("add, explode, finish, peek");
    expect(r.rewardComponents.invalid_call).toBe(-0.1);
    expect(r.observation.source).toBe("tool");
    checkStep(env, r);
    expect((await env.snapshot()).calls).toEqual([
      { step: 1, tool: "launch_rockets", args: {}, status: "invalid", at: expect.any(Number) },
    ]);
  });

  it("invalid tool arguments are invalid_call and name the argument", async () => {
    const env = await started();
    for (const args of [{ amount: "5" }, { amount: 0 }, { amount: 2.5 }, {}, { amount: 1, note: 7 }]) {
      const r = await env.step({ type: "tool_call", tool: "add", args });
      expect(toolResult(r).status).toBe("invalid");
      expect(r.observation.rendered).toMatch(/args\.(amount|note)/);
      expect(r.rewardComponents.invalid_call).toBe(-0.1);
      expect(r.rewardComponents.tool_cost === 0).toBe(true);
    }
    expect(((await env.snapshot()).world as { counter: number }).counter).toBe(0);
  });

  // BUG (src/core/environment.ts callTool -> toJson): args that are not JSON-serializable (a BigInt, a
  // circular object) pass ActionSchema (z.record of z.unknown) and the tool middleware, then
  // `JSON.parse(JSON.stringify(args))` for the call log throws a TypeError out of step(), after the step
  // counter was incremented and the tool already ran. Expected: an invalid_call error observation.
  it.each([
    ["a BigInt", { x: 1n }],
    ["a circular object", (() => {
      const c: Record<string, unknown> = {};
      c.self = c;
      return c;
    })()],
  ])("tool_call args containing %s give an error observation instead of throwing", async (_name, args) => {
    const env = await started();
    const r = await env.step({ type: "tool_call", tool: "peek", args });
    expect(r.rewardComponents.invalid_call).toBe(-0.1);
  });
});

describe("observations and tokens", () => {
  afterEach(() => setDefaultTokenizer(o200kTokenizer));

  it("renders an ok result with the tool's own render; errors and tools without one as the environment does", async () => {
    const shout = { ...peekTool, render: (output: unknown) => `COUNTER ${(output as { counter: number }).counter}` };
    const failing = { ...explodeTool, render: () => "never used for errors" };
    class RenderingEnv extends TinyEnv {
      protected override toolset() {
        return [shout, failing, addTool];
      }
    }
    const env = new RenderingEnv();
    await env.reset(ID, 1);
    expect((await env.step({ type: "tool_call", tool: "peek", args: {} })).observation.rendered).toBe("COUNTER 0");
    expect((await env.step({ type: "tool_call", tool: "explode", args: { kind: "domain" } })).observation.rendered).toBe("[explode error] the counter is jammed");
    expect((await env.step({ type: "tool_call", tool: "add", args: { amount: 1 } })).observation.rendered).not.toContain("COUNTER");
  });

  it("reports its source: task, tool, user", async () => {
    const env = new TinyEnv();
    const obs = await env.reset(ID, 1);
    expect(obs.source).toBe("task");
    expect(obs.rendered).toContain("Bring the counter to");
    expect((await env.step({ type: "tool_call", tool: "peek", args: {} })).observation.source).toBe("tool");
    expect((await env.step({ type: "message", content: "ok" })).observation.source).toBe("user");
  });

  it("counts tokens with the default tokenizer (o200k_base)", async () => {
    expect(getDefaultTokenizer().name).toBe("o200k_base");
    const env = new TinyEnv();
    const obs = await env.reset(ID, 1);
    expect(obs.tokens).toBe(o200kTokenizer.count(obs.rendered));
    expect(obs.tokens).toBeGreaterThan(5);
    expect(obs.tokens).toBeLessThan(obs.rendered.length);
    const r = await env.step({ type: "tool_call", tool: "peek", args: {} });
    expect(r.observation.tokens).toBe(o200kTokenizer.count(r.observation.rendered));
  });

  it("counts hostile special-token text as plain text", async () => {
    const env = await started();
    const r = await env.step({ type: "message", content: "<|endoftext|><|im_start|>" });
    expect(r.observation.tokens).toBe(o200kTokenizer.count(r.observation.rendered));
    expect(r.observation.rendered).toContain("<|endoftext|>");
  });

  it("uses a custom pluggable tokenizer", async () => {
    const calls: string[] = [];
    const chars: Tokenizer = { name: "chars", count: (text) => (calls.push(text), text.length) };
    const env = new TinyEnv({ tokenizer: chars });
    const obs = await env.reset(ID, 1);
    expect(obs.tokens).toBe(obs.rendered.length);
    const r = await env.step({ type: "message", content: "hello" });
    expect(r.observation.tokens).toBe(r.observation.rendered.length);
    expect(calls).toEqual([obs.rendered, r.observation.rendered]);
  });

  it("follows the process-wide default tokenizer when none is given", async () => {
    setDefaultTokenizer(approximateTokenizer);
    const env = new TinyEnv();
    const obs = await env.reset(ID, 1);
    expect(obs.tokens).toBe(Math.ceil(Buffer.byteLength(obs.rendered, "utf8") / 4));
  });

  it("echoes call_id and renders JSON tool output", async () => {
    const env = await started();
    const r = await env.step({ type: "tool_call", tool: "peek", args: {}, call_id: "c-1" });
    expect(r.info.call_id).toBe("c-1");
    const out = JSON.parse(r.observation.rendered) as Record<string, unknown>;
    expect(out).toMatchObject({ counter: 0, now: expect.stringMatching(/^2026-01-05T09:00:00\.\d{3}Z$/) });
  });

  it("OpenAI strict null optional arguments are accepted", async () => {
    const env = await started();
    const r = await env.step({ type: "tool_call", tool: "add", args: { amount: 2, note: null } });
    expect(toolResult(r).status).toBe("ok");
    expect(r.observation.rendered).toBe("counter is now 2");
  });
});

describe("tools()", () => {
  it("lists strict JSON-Schema specs with effects", async () => {
    const env = await started();
    const specs = env.tools();
    expect(specs.map((s) => s.name)).toEqual(["peek", "add", "explode", "finish"]);
    const add = specs.find((s) => s.name === "add")!;
    expect(add.effect).toBe("write");
    expect(add.parameters).toMatchObject({ type: "object", required: ["amount", "note"], additionalProperties: false });
  });
});

describe("per-task tool overrides and the virtual clock", () => {
  it("latency advances the virtual clock; the hard task's override is applied", async () => {
    const easy = await started();
    await easy.step({ type: "tool_call", tool: "add", args: { amount: 1 } });
    expect((await easy.snapshot()).clock.nowMs).toBe(Date.UTC(2026, 0, 5, 9) + 100);
    const hard = await started({}, "tiny/hard/seed-1");
    const r = await hard.step({ type: "tool_call", tool: "peek", args: {} });
    expect(toolResult(r).latency_ms).toBe(999);
    const p = await easy.step({ type: "tool_call", tool: "peek", args: {} });
    expect(toolResult(p).latency_ms).toBeGreaterThanOrEqual(10);
    expect(toolResult(p).latency_ms).toBeLessThanOrEqual(50);
  });

  it("read tools run with read sandbox access, then access returns to write", async () => {
    const env = await started();
    await env.step({ type: "tool_call", tool: "peek", args: {} });
    expect(env.sandbox.modes).toEqual(["read", "write"]);
    await env.step({ type: "tool_call", tool: "add", args: { amount: 1 } });
    expect(env.sandbox.modes).toEqual(["read", "write", "write", "write"]);
    await env.step({ type: "tool_call", tool: "add", args: { amount: 99 } }); // denied: never runs
    expect(env.sandbox.modes).toHaveLength(4);
  });
});

describe("snapshot / restore", () => {
  const script: Action[] = [
    { type: "tool_call", tool: "peek", args: {} },
    { type: "tool_call", tool: "add", args: { amount: 3 } },
    { type: "message", content: "still here" },
    { type: "tool_call", tool: "peek", args: { verbose: true } },
    { type: "tool_call", tool: "add", args: { amount: 2, note: "x" } },
    { type: "tool_call", tool: "peek", args: {} },
  ];

  async function play(env: TinyEnv, actions: Action[]): Promise<string[]> {
    const out: string[] = [];
    for (const a of actions) out.push(canonicalJson((await env.step(a)) as unknown));
    return out;
  }

  it("restoring into a fresh instance continues byte-for-byte", async () => {
    const a = await started();
    await play(a, script.slice(0, 3));
    const snap = await a.snapshot();
    const wire = JSON.parse(JSON.stringify(snap)) as EnvironmentSnapshot;
    const restA = await play(a, script.slice(3));
    const finalA = canonicalJson(await a.snapshot());

    const b = new TinyEnv();
    await b.restore(wire);
    expect(canonicalJson(await b.snapshot())).toBe(canonicalJson(snap));
    const restB = await play(b, script.slice(3));
    expect(restB).toEqual(restA);
    expect(canonicalJson(await b.snapshot())).toBe(finalA);
  });

  it("restoring into the same instance rewinds it", async () => {
    const env = await started();
    await play(env, script.slice(0, 2));
    const snap = await env.snapshot();
    const first = await play(env, script.slice(2));
    await env.restore(snap);
    const second = await play(env, script.slice(2));
    expect(second).toEqual(first);
  });

  it("restoring an ended episode keeps it ended", async () => {
    const env = await started();
    await env.step({ type: "message", content: "DONE" });
    const snap = await env.snapshot();
    const other = new TinyEnv();
    await other.restore(snap);
    expect((await other.step({ type: "message", content: "x" })).info.error).toMatchObject({ code: "episode_ended" });
  });

  it("the snapshot is JSON and holds the world, RNG, clock, calls and messages", async () => {
    const env = await started();
    await play(env, script.slice(0, 3));
    const snap = await env.snapshot();
    expect(snap).toMatchObject({
      format: "llmix.snapshot/1",
      env: "tiny",
      version: "1.0.0",
      task_id: ID,
      seed: 7,
      step: 3,
      status: "running",
      end_reason: null,
      messages: ["still here"],
    });
    expect(snap.calls.map((c) => [c.step, c.tool, c.status])).toEqual([
      [1, "peek", "ok"],
      [2, "add", "ok"],
    ]);
    expect(snap.calls[1]!.args).toEqual({ amount: 3 });
    expect(JSON.parse(JSON.stringify(snap))).toEqual(snap);
  });

  it("a snapshot does not change when the episode continues (tiny env)", async () => {
    const env = await started();
    const snap = await env.snapshot();
    const before = canonicalJson(snap);
    await play(env, script);
    expect(canonicalJson(snap)).toBe(before);
  });

  // BUG (src/core/environment.ts snapshot(), with examples/inventory-restock.ts snapshotWorld): the base
  // stores `this.snapshotWorld(ep.world)` as is; the example returns live references to world.stock and
  // world.orders, so a snapshot taken earlier changes as the episode continues (restore() then rewinds to
  // the wrong state). Fix: `world: cloneJson(this.snapshotWorld(ep.world))` in the base (and copy in the example).
  it("a snapshot does not change when the episode continues (inventory example)", async () => {
    const env = new InventoryRestock();
    await env.reset("inventory-restock/easy/seed-1", 3);
    const snap = await env.snapshot();
    const before = canonicalJson(snap);
    const solver = env.referenceSolver();
    await runPolicy(env, solver, { maxSteps: env.maxSteps });
    expect(canonicalJson(snap)).toBe(before);
  });

  it("a snapshot from another environment is invalid_snapshot", async () => {
    const example = new InventoryRestock();
    await example.reset("inventory-restock/easy/seed-1", 1);
    const snap = await example.snapshot();
    const error = await rejection(new TinyEnv().restore(snap));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.code).toBe("invalid_snapshot");
    expect(error.message).toContain("inventory-restock@1.0.0");
  });

  it("a snapshot from another version is invalid_snapshot", async () => {
    const v2 = new TinyEnvV2();
    await v2.reset(ID, 1);
    const error = await rejection(new TinyEnv().restore(await v2.snapshot()));
    expect(error.code).toBe("invalid_snapshot");
    expect(error.message).toContain("tiny@2.0.0");
  });

  const garbage: Array<[string, (s: EnvironmentSnapshot) => unknown]> = [
    ["null", () => null],
    ["a string", () => "snapshot"],
    ["an empty object", () => ({})],
    ["an array", () => []],
    ["a wrong format", (s) => ({ ...s, format: "llmix.snapshot/2" })],
    ["a negative step", (s) => ({ ...s, step: -1 })],
    ["a fractional step", (s) => ({ ...s, step: 1.5 })],
    ["negative tokens", (s) => ({ ...s, tokens: -1 })],
    ["an unknown status", (s) => ({ ...s, status: "paused" })],
    ["a missing clock", (s) => ({ ...s, clock: undefined })],
    ["a non-finite clock", (s) => ({ ...s, clock: { nowMs: "later" } })],
    ["messages that are not strings", (s) => ({ ...s, messages: [1] })],
    ["an RNG state with a numeric key", (s) => ({ ...s, rng: { ...s.rng, world: { key: 1, s: [1, 2, 3, 4] } } })],
    ["an RNG state with three words", (s) => ({ ...s, rng: { ...s.rng, tools: { key: "k", s: [1, 2, 3] } } })],
    ["a missing RNG", (s) => ({ ...s, rng: {} })],
    ["a broken world", (s) => ({ ...s, world: { counter: "zero" } })],
    ["a null world", (s) => ({ ...s, world: null })],
  ];

  it.each(garbage)("restoring %s is invalid_snapshot and keeps the current episode", async (_name, corrupt) => {
    const env = await started();
    await env.step({ type: "tool_call", tool: "add", args: { amount: 4 } });
    const good = await env.snapshot();
    const error = await rejection(env.restore(corrupt(structuredClone(good)) as EnvironmentSnapshot));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.code).toBe("invalid_snapshot");
    expect(canonicalJson(await env.snapshot())).toBe(canonicalJson(good));
  });

  // BUG (src/core/environment.ts restore): fields validated by other helpers leak those helpers' codes
  // instead of invalid_snapshot: an all-zero RNG state -> invalid_argument (Rng constructor), a seed out of
  // range -> invalid_argument (assertSeed), a malformed or unknown task id -> invalid_task_id (generateTask).
  // Fix: wrap those calls in restore() and rethrow as ValidationError("invalid_snapshot", ...).
  const leaking: Array<[string, (s: EnvironmentSnapshot) => unknown]> = [
    ["an all-zero RNG state", (s) => ({ ...s, rng: { ...s.rng, world: { key: "k", s: [0, 0, 0, 0] } } })],
    ["a negative seed", (s) => ({ ...s, seed: -1 })],
    ["a seed above 2^32-1", (s) => ({ ...s, seed: 2 ** 32 })],
    ["a malformed task id", (s) => ({ ...s, task_id: "not a task" })],
    ["an unknown difficulty", (s) => ({ ...s, task_id: "tiny/medium/seed-1" })],
  ];

  it.each(leaking)("restoring a snapshot with %s is invalid_snapshot", async (_name, corrupt) => {
    const env = await started();
    const good = await env.snapshot();
    const error = await rejection(env.restore(corrupt(structuredClone(good)) as EnvironmentSnapshot));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.code).toBe("invalid_snapshot");
  });
});

describe("reset arguments", () => {
  it.each([-1, 1.5, "3", 2 ** 32, Number.NaN, null, undefined, Number.POSITIVE_INFINITY])(
    "seed %s is invalid_argument",
    async (seed) => {
      const env = new TinyEnv();
      const error = await rejection(env.reset(ID, seed as number));
      expect(error).toBeInstanceOf(ValidationError);
      expect(error.code).toBe("invalid_argument");
    },
  );

  it("accepts the seed range ends 0 and 2^32-1", async () => {
    const env = new TinyEnv();
    await expect(env.reset(ID, 0)).resolves.toMatchObject({ source: "task" });
    await expect(env.reset(ID, 0xffffffff)).resolves.toMatchObject({ source: "task" });
  });

  it("unknown difficulties are invalid_task_id naming the valid ones", async () => {
    const error = await rejection(new TinyEnv().reset("tiny/medium/seed-1", 1));
    expect(error.code).toBe("invalid_task_id");
    expect(error.message).toContain("easy, hard, locked");
    expect(error.details).toEqual({ valid: ["easy", "hard", "locked"] });
  });

  it("unknown families are invalid_task_id naming the valid ones", async () => {
    const error = await rejection(new TinyEnv().reset("inventory-restock/easy/seed-1", 1));
    expect(error.code).toBe("invalid_task_id");
    expect(error.message).toContain("valid: tiny");
  });

  it.each(["", "tiny/easy", "tiny/easy/seed-01", "tiny/easy/seed--1", "tiny/easy/7", "Tiny/easy/seed-1", "tiny/easy/seed-1/x"])(
    "task id %j is invalid_task_id",
    async (taskId) => {
      const error = await rejection(new TinyEnv().reset(taskId, 1));
      expect(error).toBeInstanceOf(ValidationError);
      expect(error.code).toBe("invalid_task_id");
    },
  );

  it("a failed reset keeps the running episode", async () => {
    const env = await started();
    await env.step({ type: "tool_call", tool: "add", args: { amount: 2 } });
    const before = canonicalJson(await env.snapshot());
    await rejection(env.reset(ID, -1));
    await rejection(env.reset("tiny/nope/seed-1", 1));
    expect(canonicalJson(await env.snapshot())).toBe(before);
  });
});

describe("reset isolation and determinism", () => {
  it("reset restores the initial state exactly", async () => {
    const env = new TinyEnv();
    const obs1 = await env.reset(ID, 5);
    const snap1 = canonicalJson(await env.snapshot());
    await env.step({ type: "tool_call", tool: "add", args: { amount: 3 } });
    await env.step({ type: "tool_call", tool: "peek", args: {} });
    const obs2 = await env.reset(ID, 5);
    expect(obs2).toEqual(obs1);
    expect(canonicalJson(await env.snapshot())).toBe(snap1);
    const fresh = new TinyEnv();
    await fresh.reset(ID, 5);
    expect(canonicalJson(await fresh.snapshot())).toBe(snap1);
  });

  it("the seed changes the episode, the task id changes the task", async () => {
    const env = new TinyEnv();
    const a = await env.reset(ID, 1);
    const b = await env.reset(ID, 2);
    expect(b.rendered).not.toBe(a.rendered);
    // same task id: same task part of the text
    expect(b.rendered.split(". Noise")[0]).toBe(a.rendered.split(". Noise")[0]);
  });

  it("interleaved instances do not share state", async () => {
    const a = await started();
    const b = await started();
    await a.step({ type: "tool_call", tool: "add", args: { amount: 5 } });
    const pb = await b.step({ type: "tool_call", tool: "peek", args: {} });
    expect(JSON.parse(pb.observation.rendered)).toMatchObject({ counter: 0 });
    const c = await started();
    const pc = await c.step({ type: "tool_call", tool: "peek", args: {} });
    expect(pc.observation.rendered).toBe(pb.observation.rendered);
  });

  it("the same (taskId, seed) yields identical step results", async () => {
    const actions: Action[] = [
      { type: "tool_call", tool: "peek", args: {} },
      { type: "tool_call", tool: "add", args: { amount: 3 } },
      { type: "tool_call", tool: "peek", args: {} },
    ];
    const results: string[][] = [];
    for (let k = 0; k < 2; k++) {
      const env = await started({}, ID, 99);
      const out: string[] = [];
      for (const a of actions) out.push(canonicalJson((await env.step(a)) as unknown));
      out.push(canonicalJson(await env.snapshot()));
      results.push(out);
    }
    expect(results[1]).toEqual(results[0]);
  });
});

describe("the inventory-restock example", () => {
  it.each(["easy", "medium", "hard"])("the reference solver scores 1 on %s tasks", async (difficulty) => {
    const env = new InventoryRestock();
    const initial = await env.reset(`inventory-restock/${difficulty}/seed-4`, 2);
    const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
    for (const t of run.transitions) checkStep(env, t.result);
    expect(run.final?.terminated).toBe(true);
    expect(run.final?.rewardComponents.task).toBe(1);
  });

  it("probes do not score", async () => {
    const env = new InventoryRestock();
    await env.reset("inventory-restock/medium/seed-9", 1);
    for (const name of Object.keys(env.probes())) {
      const initial = await env.reset("inventory-restock/medium/seed-9", 1);
      const probe = env.probes()[name]!;
      const run = await runPolicy(env, probe, { maxSteps: env.maxSteps, initial });
      expect(run.final?.rewardComponents.task ?? 0).toBeLessThan(1);
    }
  });
});

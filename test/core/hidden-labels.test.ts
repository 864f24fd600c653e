/**
 * Hidden labels stay hidden (issue 13): a component whose value depends on the task's hidden truth is
 * paid at the episode's end, so a policy cannot act, read the reward and undo. The total survives a
 * snapshot and is paid on truncation too; `payOnStep` opts out explicitly.
 */
import { z } from "zod";
import { describe, expect, it } from "vitest";
import { BaseEnvironment, toolsFor, type AnyTool, type ComponentBounds, type EnvironmentInfo, type Episode, type JsonValue, type MessageOutcome, type TaskGenerator, type VerifierResult } from "../../src/index.js";

interface Task {
  culprit: number;
}
interface World {
  flagged: number[];
}
const tasks: TaskGenerator<Task> = { families: ["suspects"], difficulties: ["easy"], generate: (_id, rng) => ({ culprit: rng.int(1, 5) }) };
const tool = toolsFor<World, Task>();
const flag = tool({
  name: "flag",
  description: "Flag a suspect (1-5).",
  input: z.object({ id: z.number().int().min(1).max(5) }),
  effect: "write",
  handler: (args, ctx) => {
    ctx.world.flagged.push(args.id);
    // The hidden truth: only the culprit may be flagged.
    if (args.id !== ctx.task.culprit) ctx.reward("wrong_flag", -0.25);
    return `flagged ${args.id}`;
  },
});

function envWith(bounds: ComponentBounds) {
  return class Suspects extends BaseEnvironment<Task, World> {
    readonly info: EnvironmentInfo = { id: "suspects", version: "1.0.0", description: "Flag the culprit.", maxSteps: 4, components: { wrong_flag: bounds } };
    readonly tasks = tasks;
    protected createWorld(): World {
      return { flagged: [] };
    }
    protected describeTask(): string {
      return "Flag the culprit among suspects 1-5, then say DONE.";
    }
    protected toolset(): readonly AnyTool<World, Task>[] {
      return [flag];
    }
    protected override onMessage(content: string): MessageOutcome {
      return content === "DONE" ? { rendered: "ok", end: "final_answer" } : { rendered: "go on" };
    }
    protected evaluate(episode: Episode<Task, World>): VerifierResult {
      const ok = episode.world.flagged.includes(episode.task.culprit);
      return { score: ok ? 1 : 0, passed: ok, details: {} };
    }
    protected snapshotWorld(world: World): JsonValue {
      return { flagged: [...world.flagged] };
    }
    protected restoreWorld(state: JsonValue): World {
      return { flagged: [...(state as { flagged: number[] }).flagged] };
    }
  };
}

const HIDDEN: ComponentBounds = { min: -1, max: 0, description: "Flagged someone innocent.", hiddenLabel: true };
const flagStep = (id: number) => ({ type: "tool_call" as const, tool: "flag", args: { id } });

describe("hidden-label components", () => {
  it("are not paid on the step: flagging the culprit and an innocent read the same reward", async () => {
    const Env = envWith(HIDDEN);
    const env = new Env();
    await env.reset("suspects/easy/seed-1", 1);
    const steps = [];
    for (let id = 1; id <= 3; id++) steps.push(await env.step(flagStep(id)));
    expect(new Set(steps.map((s) => s.rewardComponents.wrong_flag))).toEqual(new Set([0]));
    expect(new Set(steps.map((s) => s.reward)).size).toBe(1);
    const end = await env.step({ type: "message", content: "DONE" });
    const culprit = (env as unknown as { episode: Episode<Task, World> }).episode.task.culprit;
    const innocents = [1, 2, 3].filter((id) => id !== culprit).length;
    expect(end.rewardComponents.wrong_flag).toBeCloseTo(-0.25 * innocents);
  });

  it("carry their held total through a snapshot, and are paid on truncation, clamped to the bounds", async () => {
    const Env = envWith(HIDDEN);
    const env = new Env();
    await env.reset("suspects/easy/seed-2", 2);
    await env.step(flagStep(1));
    await env.step(flagStep(2));
    const copy = new Env();
    await copy.restore(await env.snapshot());
    for (const e of [env, copy]) {
      await e.step(flagStep(3));
      const last = await e.step(flagStep(4));
      expect(last.truncated).toBe(true);
      expect(last.rewardComponents.wrong_flag).toBeCloseTo(-0.75);
    }
  });

  it("payOnStep opts in to paying on the step", async () => {
    const Env = envWith({ ...HIDDEN, payOnStep: true });
    const env = new Env();
    await env.reset("suspects/easy/seed-1", 1);
    const rewards = [];
    for (let id = 1; id <= 3; id++) rewards.push((await env.step(flagStep(id))).rewardComponents.wrong_flag);
    const culprit = (env as unknown as { episode: Episode<Task, World> }).episode.task.culprit;
    expect(rewards).toEqual([1, 2, 3].map((id) => (id === culprit ? 0 : -0.25)));
  });
});

/**
 * The web tools in an environment: gestures as tool calls through the middleware (injected failures,
 * latency), the page as the observation, and a mid-episode snapshot that continues identically.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  BaseEnvironment,
  FastDriver,
  WebSession,
  webTools,
  type Action,
  type Episode,
  type EnvironmentInfo,
  type JsonValue,
  type TaskGenerator,
  type VerifierResult,
} from "../../src/index.js";
import { testApp, type TestWorld } from "../../src/sandboxes/web/test-support.js";

interface Task {
  item: string;
  flaky: boolean;
}
interface World {
  state: TestWorld;
  web: WebSession;
}

const tasks: TaskGenerator<Task> = {
  families: ["webdemo"],
  difficulties: ["easy", "flaky"],
  generate: (id, rng) => ({ item: rng.pick(["apple", "banana", "cherry"]), flaky: id.difficulty === "flaky" }),
};

class WebDemo extends BaseEnvironment<Task, World> {
  readonly info: EnvironmentInfo = { id: "webdemo", version: "1.0.0", description: "Order the named item.", maxSteps: 20, messages: { kind: "final_answer" }, components: {} };
  readonly tasks = tasks;
  protected createWorld(episode: Omit<Episode<Task, never>, "world">): World {
    const state: TestWorld = { items: ["apple", "banana", "cherry"], orders: [] };
    return { state, web: new WebSession(new FastDriver(testApp(state)), "/") };
  }
  protected describeTask(episode: Episode<Task, World>): string {
    return `Order one ${episode.task.item}.`;
  }
  protected toolset(episode: Episode<Task, World>) {
    return webTools<World, Task>({ session: (world) => world.web, ...(episode.task.flaky ? { failures: { error: 1 } } : {}) });
  }
  protected evaluate(episode: Episode<Task, World>): VerifierResult {
    const ok = episode.world.state.orders.length === 1 && episode.world.state.orders[0]?.item === episode.task.item;
    return { score: ok ? 1 : 0, passed: ok, details: {} };
  }
  protected snapshotWorld(world: World): JsonValue {
    return { state: world.state, web: world.web.snapshot() } as unknown as JsonValue;
  }
  protected restoreWorld(saved: JsonValue): World {
    const { state, web } = structuredClone(saved) as unknown as { state: TestWorld; web: ReturnType<WebSession["snapshot"]> };
    const session = new WebSession(new FastDriver(testApp(state)), "/");
    session.restore(web);
    return { state, web: session };
  }
  protected override disposeWorld(world: World): void {
    void world.web.close();
  }
}

const envs: WebDemo[] = [];
afterEach(async () => {
  for (const env of envs.splice(0)) await env.close();
});

const call = (tool: string, args: Record<string, unknown>): Action => ({ type: "tool_call", tool, args });
const idIn = (rendered: string, pattern: RegExp): string => /^\[(\d+)\]/.exec(rendered.split("\n").find((l) => pattern.test(l)) ?? "")?.[1] ?? "0";

describe("web tools", () => {
  it("drive the page through tool calls, with the page as the observation, and restore mid-episode", async () => {
    const env = new WebDemo();
    envs.push(env);
    await env.reset("webdemo/easy/seed-3", 1);
    const task = (env as unknown as { episode: Episode<Task, World> }).episode.task;
    let obs = (await env.step(call("goto", { url: `/item/${task.item}` }))).observation.rendered;
    expect(obs).toContain(`heading "${task.item}"`);
    obs = (await env.step(call("fill", { id: idIn(obs, /textbox "Note"/), text: "hi" }))).observation.rendered;
    const saved = await env.snapshot();
    const bad = await env.step(call("click", { id: "777" }));
    expect(bad.info.tool_result).toMatchObject({ status: "error", error: { code: "stale_element" } });
    const invalid = await env.step(call("press", { key: "F5" }));
    expect((invalid.info.tool_result as { status: string }).status).toBe("invalid");
    const done = await env.step(call("click", { id: idIn(obs, /button "Place order"/) }));
    expect(done.observation.rendered).toContain("Placed order 1");
    const end = await env.step({ type: "message", content: "Ordered." });
    expect(end.terminated).toBe(true);
    expect((end.info.verdict as { score: number }).score).toBe(1);

    const copy = new WebDemo();
    envs.push(copy);
    await copy.restore(saved);
    await copy.step(call("click", { id: "777" }));
    await copy.step(call("press", { key: "F5" }));
    const again = await copy.step(call("click", { id: idIn(obs, /button "Place order"/) }));
    expect(again.observation.rendered).toBe(done.observation.rendered);
  });

  it("take injected page failures through the middleware", async () => {
    const env = new WebDemo();
    envs.push(env);
    await env.reset("webdemo/flaky/seed-1", 1);
    const step = await env.step(call("goto", { url: "/" }));
    expect((step.info.tool_result as { status: string }).status).toBe("error");
    const scroll = await env.step(call("scroll", { direction: "down" })); // scrolling loads nothing, so it cannot fail
    expect((scroll.info.tool_result as { status: string }).status).toBe("ok");
  });
});

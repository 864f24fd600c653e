/**
 * Driver faithfulness (issue 19): the same web-shop episodes played through the fast driver (happy-dom)
 * and the browser driver (Debian's Chromium through playwright-core) give the same observations, step by
 * step, and the same verdict. A difference is listed with both pages, so a drift names itself.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../../../test/helpers.js";
import { openStore } from "../../store/sqlite-store.js";
import type { Action } from "../../core/contract.js";
import { runPolicy } from "../../core/run-policy.js";
import { closeSharedBrowser } from "../../sandboxes/web/browser-driver.js";
import { sampleTaskIds } from "../../tasks/splits.js";
import { WebShop, pagePolicy, searchingPlan } from "./env.js";
import type { ScenarioOptions, Task } from "./tasks.js";

afterAll(closeSharedBrowser);

const CASES: { scenario: ScenarioOptions; difficulty: string }[] = [
  { scenario: { family: "buy", variant: "dark-pattern" }, difficulty: "medium" },
  { scenario: { family: "buy", variant: "out-of-stock" }, difficulty: "hard" },
  { scenario: { family: "buy", variant: "injection" }, difficulty: "hard" },
  { scenario: { family: "return", variant: "dark-pattern" }, difficulty: "hard" },
];

/** Play the searching shopper on the fast driver, then its recorded actions on the browser driver. */
async function both(taskId: string, scenario: ScenarioOptions) {
  const fast = new WebShop({ scenario });
  const initial = await fast.reset(taskId, 2);
  const task = (fast as unknown as { episode: { task: Task } }).episode.task;
  const run = await runPolicy(fast, pagePolicy("searching", searchingPlan(task)), { maxSteps: 60, initial });
  const actions: Action[] = run.transitions.map((t) => t.action as Action);
  const fastViews = run.transitions.map((t) => t.result.observation.rendered);
  const fastScore = (run.transitions.at(-1)?.result.info as { verdict: { score: number } }).verdict.score;
  await fast.close();

  const browser = new WebShop({ scenario, driver: "browser" });
  try {
    await browser.reset(taskId, 2);
    const browserViews: string[] = [];
    let browserScore = -1;
    for (const action of actions) {
      const step = await browser.step(action);
      browserViews.push(step.observation.rendered);
      if (step.terminated) browserScore = (step.info as { verdict: { score: number } }).verdict.score;
    }
    const shot = await browser.screenshot().catch(() => null);
    return { fastViews, browserViews, fastScore, browserScore, steps: actions.length, shot };
  } finally {
    await browser.close();
  }
}

describe("web-shop in both drivers", () => {
  it.each(CASES)("$scenario.family/$scenario.variant ($difficulty): same observations, same verdict", async ({ scenario, difficulty }) => {
    const [taskId] = sampleTaskIds({ family: "web-shop", difficulties: [difficulty], n: 1, seed: 21 });
    const r = await both(taskId as string, scenario);
    const differences = r.fastViews.flatMap((view, i) => (view === r.browserViews[i] ? [] : [`step ${i + 1}:\n--- fast\n${view}\n--- browser\n${r.browserViews[i]}`]));
    expect(differences).toEqual([]);
    expect(r.steps).toBeGreaterThan(5);
    expect(r.fastScore).toBe(1);
    expect(r.browserScore).toBe(1);
  }, 120_000);

  it("takes a PNG screenshot of the page the browser shows", async () => {
    const env = new WebShop({ driver: "browser" });
    try {
      await env.reset("web-shop/medium/seed-3", 1);
      await env.step({ type: "tool_call", tool: "goto", args: { url: "/search?category=backpack" } });
      const png = await env.screenshot();
      expect(png.subarray(1, 4).toString("latin1")).toBe("PNG");
      expect(() => new WebShop({ screenshots: true })).toThrow(/browser driver/);
    } finally {
      await env.close();
    }
  }, 60_000);

  it("llmix rollout --env-options stores a screenshot with every step when asked", async () => {
    const dir = mkdtempSync(join(tmpdir(), "llmix-shots-"));
    try {
      const store = join(dir, "shots.db");
      const options = JSON.stringify({ driver: "browser", screenshots: true });
      const run = await runCli("rollout", "--env", "web-shop", "--policy", "oracle", "-n", "1", "--difficulty", "easy", "--env-options", options, "--run-id", "shots", "--store", store, "--json");
      expect(run.status, run.stderr).toBe(0);
      const db = openStore(store);
      try {
        const stored = [];
        for await (const episode of db.streamEpisodes({ run_id: "shots" })) stored.push(episode);
        expect(stored).toHaveLength(1);
        expect(stored[0]?.episode.outcome).toBe(1);
        const shots = stored[0]!.steps.map((s) => (s.info as { screenshot?: { format: string; base64: string } } | undefined)?.screenshot);
        expect(shots.length).toBeGreaterThan(3);
        for (const shot of shots) {
          expect(shot?.format).toBe("png");
          expect(Buffer.from(shot?.base64 ?? "", "base64").subarray(1, 4).toString("latin1")).toBe("PNG");
        }
      } finally {
        await db.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("llmix play --browser plays in Chromium and saves the page after every step", () => {
    const dir = mkdtempSync(join(tmpdir(), "llmix-play-"));
    try {
      const bin = new URL("../../../dist/cli/bin.js", import.meta.url).pathname;
      const input = 'goto {"url": "/search?category=backpack"}\nclick {"id": "99999"}\nsay I could not decide.\n';
      const run = spawnSync(process.execPath, [bin, "play", "web-shop", "--task", "web-shop/medium/seed-4", "--seed", "1", "--browser", "--screenshots", dir], { input, encoding: "utf8", timeout: 90_000, env: { ...process.env, DISPLAY: "" } });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toContain('heading "Search"');
      expect(run.stdout).toContain("[click error] element 99999 is not a control on this page");
      expect(run.stdout).toContain(`[screenshot ${join(dir, "step-001.png")}]`);
      expect(readFileSync(join(dir, "step-001.png")).subarray(1, 4).toString("latin1")).toBe("PNG");
      expect(readFileSync(join(dir, "step-002.png")).subarray(1, 4).toString("latin1")).toBe("PNG");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

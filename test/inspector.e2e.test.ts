/**
 * The trajectory inspector in a real browser (Debian's Chromium through playwright-core): a store holding
 * a noisy-oracle run of every built-in environment, recorded with `llmix rollout`, served by the service
 * with the inspector mounted; the test navigates the run list, opens each run (its figures must be the
 * API's), filters, opens episodes by keyboard, reads a web-shop episode's state difference, replays one,
 * compares two, and signs in on a service with auth. It takes screenshots on the way and checks they
 * show something; with LLMIX_UPDATE_SCREENSHOTS=1 they replace docs/images/inspector-*.png.
 *
 * Needs `npm run build` (dist/cli and dist/ui), as `npm test` does first.
 */
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { PNG } from "pngjs";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TrajectoryStepRecord } from "../src/core/contract.js";
import { builtinRegistry } from "../src/envs/index.js";
import type { SliceMetrics } from "../src/rollout/metrics.js";
import type { ReplayReport } from "../src/rollout/replay.js";
import { CHROMIUM_ARGS, chromiumPath } from "../src/sandboxes/web/browser-driver.js";
import { registerInspector } from "../src/server/inspector.js";
import { startServer, type RunningServer } from "../src/server/serve.js";
import type { EpisodeRecord, RunRecord } from "../src/store/types.js";
import { num, pct } from "../ui/src/format.js";
import type { Episode, ReplayReport as UiReplayReport, RunSummary, SliceMetrics as UiSliceMetrics, Step } from "../ui/src/wire.js";

// The inspector's copies of the wire types (ui/src/wire.ts) must still fit what the server sends: a
// field renamed on one side fails `npm run typecheck` here.
type Fits<Server, Ui> = Server extends Ui ? true : false;
const wireTypesFit: [Fits<EpisodeRecord, Episode>, Fits<SliceMetrics, UiSliceMetrics>, Fits<TrajectoryStepRecord, Step>, Fits<ReplayReport, UiReplayReport>, Fits<RunRecord, RunSummary>] = [true, true, true, true, true];

const run = promisify(execFile);
const ENVS = ["billing-dispute", "code-repair", "incident-response", "web-shop"] as const;
const runIdOf = (env: string) => `inspect-${env}`;
const UPDATE = process.env.LLMIX_UPDATE_SCREENSHOTS === "1";
/** `llmix ui` as the built CLI registers it (node -e puts the arguments from argv[1] on). */

let dir: string;
let storePath: string;
let shotsDir: string;
let server: RunningServer;
let browser: Browser;
let page: Page;
/** Errors the page logged (a CSP violation, an exception): there must be none. */
const pageErrors: string[] = [];

/** GET the service's JSON. */
async function api<T>(path: string, token?: string): Promise<T> {
  const res = await fetch(`${server.url}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  expect(res.status, path).toBe(200);
  return (await res.json()) as T;
}

/** Take a screenshot, check it is not blank, and keep it under docs/images when asked. */
async function screenshot(name: string, fullPage: boolean): Promise<void> {
  const file = join(shotsDir, `inspector-${name}.png`);
  await page.screenshot({ path: file, fullPage });
  const png = PNG.sync.read(readFileSync(file));
  // A blank or one-colour image has almost no spread of brightness and few colours.
  const colours = new Set<number>();
  let sum = 0;
  let sumSq = 0;
  const pixels = png.width * png.height;
  for (let i = 0; i < png.data.length; i += 4) {
    const [r, g, b] = [png.data[i] as number, png.data[i + 1] as number, png.data[i + 2] as number];
    const y = 0.299 * r + 0.587 * g + 0.114 * b;
    sum += y;
    sumSq += y * y;
    if (colours.size < 5000) colours.add((r << 16) | (g << 8) | b);
  }
  const variance = sumSq / pixels - (sum / pixels) ** 2;
  expect(png.width, name).toBeGreaterThan(600);
  expect(variance, `${name}: brightness variance`).toBeGreaterThan(200);
  expect(colours.size, `${name}: distinct colours`).toBeGreaterThan(50);
}

/** Wait until the episode filters let `n` episodes through. */
const matchCount = (n: number) => page.locator(`[data-testid=match-count][data-count="${n}"]`).waitFor();

/** Text of every cell of a locator list. */
const texts = async (selector: string) => (await page.locator(selector).allInnerTexts()).map((t) => t.trim());

beforeAll(async () => {
  if (!existsSync("dist/cli/bin.js") || !existsSync("dist/ui/index.html")) throw new Error("run `npm run build` first: the test drives dist/cli/bin.js and dist/ui");
  dir = mkdtempSync(join(tmpdir(), "llmix-inspector-e2e-"));
  storePath = join(dir, "store.db");
  shotsDir = UPDATE ? join(process.cwd(), "docs", "images") : join(dir, "shots");
  mkdirSync(shotsDir, { recursive: true });
  // Two rollouts at a time (two cores); each is one `llmix rollout` process writing to the same SQLite store.
  const record = (env: string) =>
    run(process.execPath, ["dist/cli/bin.js", "rollout", "--env", env, "--policy", "noisy-oracle:0.3", "-n", "12", "--group", "2", "--store", storePath, "--run-id", runIdOf(env), "--json"], { maxBuffer: 16 * 1024 * 1024 });
  await Promise.all([record(ENVS[0]), record(ENVS[1])]);
  await Promise.all([record(ENVS[2]), record(ENVS[3])]);
  server = await startServer({
    registry: builtinRegistry(), port: 0, storePath, hosts: 1,
    extraRoutes: (app) => registerInspector(app),
  });
  browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS });
  page = await (await browser.newContext({ viewport: { width: 1400, height: 900 }, deviceScaleFactor: 1 })).newPage();
  page.on("pageerror", (error) => pageErrors.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") pageErrors.push(`console: ${message.text()}`);
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the inspector in Chromium", () => {
  it("keeps the UI's wire types in step with the server's", () => {
    expect(wireTypesFit.every(Boolean)).toBe(true);
  });

  it("lists every run with its episodes and success rate", async () => {
    const { runs } = await api<{ runs: Array<RunRecord & { episodes: number }> }>("/v1/runs?limit=50");
    await page.goto(`${server.url}/ui/`);
    await page.locator("#runs tbody tr").nth(ENVS.length - 1).waitFor();
    expect(await page.locator("#runs tbody tr").count()).toBe(runs.length);
    // Success rates arrive one run at a time: wait until none is pending.
    await page.waitForFunction(`[...document.querySelectorAll('#runs td[data-col="success"]')].every((td) => td.textContent !== "…")`);
    for (const env of ENVS) {
      const row = page.locator(`#runs tr[data-run-id="${runIdOf(env)}"]`);
      const { metrics } = await api<{ metrics: SliceMetrics[] }>(`/v1/runs/${runIdOf(env)}`);
      expect((await row.locator('td[data-col="success"]').innerText()).trim()).toBe(pct(metrics.find((m) => m.difficulty === "all")?.success_rate));
      expect((await row.locator('td[data-col="episodes"]').innerText()).trim()).toBe(String(runs.find((r) => r.run_id === runIdOf(env))?.episodes));
    }
    await screenshot("runs", false);
  });

  it("shows each run's metrics as the API computes them, with its charts", async () => {
    for (const env of ENVS) {
      const runId = runIdOf(env);
      await page.goto(`${server.url}/ui/#/runs`);
      await page.locator(`#runs a[href="#/runs/${encodeURIComponent(runId)}"]`).click();
      await page.locator("#metrics tbody tr").first().waitFor();
      const { metrics } = await api<{ metrics: SliceMetrics[] }>(`/v1/runs/${encodeURIComponent(runId)}`);
      expect(await texts("#metrics tbody th")).toEqual(metrics.map((m) => m.difficulty));
      for (const m of metrics) {
        const cell = (key: string) => page.locator(`#metrics tr[data-difficulty="${m.difficulty}"] td[data-metric="${key}"]`).innerText();
        expect(await cell("episodes"), `${env} ${m.difficulty}`).toBe(String(m.episodes));
        expect(await cell("success_rate"), `${env} ${m.difficulty}`).toBe(pct(m.success_rate));
        expect(await cell("mean_total_reward"), `${env} ${m.difficulty}`).toBe(num(m.mean_total_reward));
        expect(await cell("pass_at_k"), `${env} ${m.difficulty}`).toBe(pct(m.pass_at_k));
      }
      // Five charts, each drawn on a canvas by uPlot.
      await page.locator(".chart canvas").nth(4).waitFor();
      expect(await page.locator(".chart").count()).toBe(5);
      const total = metrics.find((m) => m.difficulty === "all");
      expect(await page.locator("[data-testid=match-count]").getAttribute("data-count")).toBe(String((total?.episodes ?? 0) + (total?.errors ?? 0)));
      if (env === "web-shop") {
        // The families come from a host job after the rest: wait for them, so the screenshot shows the family filter.
        await page.locator("#filter-family").waitFor();
        await screenshot("run", true);
      }
    }
  });

  it("filters the failed episodes to the API's count and opens one with the keyboard", async () => {
    const runId = runIdOf("web-shop");
    const failed = await api<{ total: number; episodes: EpisodeRecord[] }>(`/v1/runs/${runId}/episodes?passed=false&limit=100`);
    expect(failed.total).toBeGreaterThan(1);
    await page.goto(`${server.url}/ui/#/runs/${runId}`);
    await page.locator("#episodes tbody tr").first().waitFor();
    await page.keyboard.press("/");
    expect(await page.evaluate('document.activeElement?.closest("label")?.textContent?.trim()')).toBe("Failed only");
    await page.keyboard.press("Space");
    await matchCount(failed.total);
    expect(await page.locator("#episodes tbody tr").count()).toBe(Math.min(25, failed.total));
    expect(page.url()).toContain("failed=1");
    // The other filters narrow to what the API counts too: a difficulty, a family, a component below its maximum.
    await page.keyboard.press("Space");
    const form = page.getByRole("search", { name: "Episode filters" });
    const byDifficulty = await api<{ total: number }>(`/v1/runs/${runId}/episodes?difficulty=hard&limit=1`);
    await form.getByLabel("Difficulty", { exact: true }).selectOption("hard");
    await matchCount(byDifficulty.total);
    await form.getByLabel("Difficulty", { exact: true }).selectOption("");
    const { tasks } = await api<{ tasks: Record<string, { family: string | null }> }>(`/v1/runs/${runId}/tasks`);
    const all = await api<{ episodes: EpisodeRecord[] }>(`/v1/runs/${runId}/episodes?limit=100`);
    const family = tasks[all.episodes[0]?.task_id as string]?.family as string;
    expect(family).toBeTruthy();
    await form.getByLabel("Family", { exact: true }).selectOption(family);
    await matchCount(all.episodes.filter((e) => tasks[e.task_id]?.family === family).length);
    await form.getByLabel("Family", { exact: true }).selectOption("");
    const taskMax = Math.max(...all.episodes.map((e) => e.reward_components.task ?? 0));
    await form.getByLabel("Component", { exact: true }).selectOption("task");
    await matchCount(all.episodes.filter((e) => (e.reward_components.task ?? 0) < taskMax).length);
    await form.getByLabel("Component", { exact: true }).selectOption("");
    await form.getByLabel("Failed only", { exact: true }).check();
    await matchCount(failed.total);
    // j j Enter: the second row opens.
    await page.keyboard.press("j");
    await page.keyboard.press("j");
    const second = await page.locator("#episodes tbody tr").nth(1).getAttribute("data-episode-id");
    await page.keyboard.press("Enter");
    await page.waitForURL((url) => url.hash === `#/episodes/${encodeURIComponent(second as string)}`);
    await page.locator("article.step").first().waitFor();
    const stored = await api<{ episode: EpisodeRecord; steps: TrajectoryStepRecord[] }>(`/v1/episodes/${encodeURIComponent(second as string)}`);
    expect(await page.locator("article.step").count()).toBe(stored.steps.length);
    const firstTool = stored.steps.map((s) => s.action).find((a) => a.type === "tool_call");
    expect(await texts("article.step h3 code")).toContain((firstTool as { tool: string }).tool);
    // Esc returns to the run, its filter kept.
    await page.keyboard.press("Escape");
    await page.waitForURL((url) => url.hash.startsWith(`#/runs/${runId}`));
    expect(page.url()).toContain("failed=1");
    await page.locator("#episodes tbody tr").first().waitFor();
    expect(await page.locator("[data-testid=match-count]").getAttribute("data-count")).toBe(String(failed.total));
  });

  it("shows a failed web-shop episode's state difference against the reference, and replays it", async () => {
    const runId = runIdOf("web-shop");
    const failed = await api<{ episodes: EpisodeRecord[] }>(`/v1/runs/${runId}/episodes?passed=false&limit=100`);
    // The one with the most steps shows the most on its page.
    const episode = [...failed.episodes].sort((a, b) => b.steps - a.steps)[0] as EpisodeRecord;
    const differences = ((episode.verdict as { details?: { differences?: string[] } }).details?.differences ?? []) as string[];
    expect(differences.length).toBeGreaterThan(0);
    await page.goto(`${server.url}/ui/#/episodes/${encodeURIComponent(episode.episode_id)}`);
    const diff = page.locator("[data-testid=state-difference]");
    await diff.waitFor();
    for (const line of differences) expect(await diff.innerText()).toContain(line);
    expect(await page.locator("h1 .badge").innerText()).toBe("failed");
    await screenshot("episode", false);
    await page.locator("button[data-action=replay]").click();
    await page.locator("[data-testid=replay-result] .ok").waitFor({ timeout: 30_000 });
    expect(await page.locator("[data-testid=replay-result]").innerText()).toContain(`Replay matched: all ${episode.steps} steps reproduced`);
  });

  it("compares two episodes of one task side by side", async () => {
    const runId = runIdOf("web-shop");
    const { episodes } = await api<{ episodes: EpisodeRecord[] }>(`/v1/runs/${runId}/episodes?limit=100`);
    // A group whose two rollouts differ: one passed and one did not, or different lengths.
    const groups = new Map<string, EpisodeRecord[]>();
    for (const e of episodes) groups.set(e.group_id, [...(groups.get(e.group_id) ?? []), e]);
    const pair = [...groups.values()].find((g) => g.length === 2 && (g[0]?.total_reward !== g[1]?.total_reward || g[0]?.steps !== g[1]?.steps)) as EpisodeRecord[];
    expect(pair).toBeDefined();
    await page.goto(`${server.url}/ui/#/runs/${runId}`);
    await page.locator("#episodes tbody tr").first().waitFor();
    await page.evaluate('sessionStorage.removeItem("llmix.inspector.compare")');
    // Mark both with `c` on their rows: the second mark opens the comparison.
    for (const e of pair) {
      await page.locator(`#episodes tr[data-episode-id="${e.episode_id}"] a[data-nav-primary]`).focus();
      await page.keyboard.press("c");
    }
    await page.waitForURL((url) => url.hash.startsWith("#/compare/"));
    await page.locator("#compare tbody tr").first().waitFor();
    expect(await page.locator("#compare tbody tr").count()).toBe(Math.max(...pair.map((e) => e.steps)));
    expect(await page.locator("#compare tbody tr[data-differs=true]").count()).toBeGreaterThan(0);
    const summary = await page.locator("[data-testid=compare-summary]").innerText();
    expect(summary).toContain("Same task and seed");
    for (const e of pair) expect(await page.locator(".side h2").allInnerTexts()).toContainEqual(expect.stringContaining(e.task_id));
    await screenshot("compare", false);
  });

  it("reaches every control with Tab, focus visible", async () => {
    await page.goto(`${server.url}/ui/#/runs/${runIdOf("code-repair")}`);
    await page.locator("#episodes tbody tr").first().waitFor();
    const reached = new Set<string>();
    for (let i = 0; i < 80; i++) {
      await page.keyboard.press("Tab");
      const info = (await page.evaluate(`(() => {
        const el = document.activeElement;
        if (!el) return null;
        const style = getComputedStyle(el);
        return { tag: el.tagName, text: (el.getAttribute("aria-label") ?? el.textContent ?? "").trim().slice(0, 40), outline: style.outlineStyle !== "none" && style.outlineWidth !== "0px" };
      })()`)) as { tag: string; text: string; outline: boolean } | null;
      // Past the last control focus leaves the page (body) before wrapping round.
      if (!info || info.tag === "BODY") continue;
      expect(info.outline, `${info.tag} ${info.text} shows focus`).toBe(true);
      reached.add(`${info.tag}:${info.text}`);
    }
    const tags = [...reached].map((r) => r.split(":")[0]);
    for (const tag of ["A", "INPUT", "SELECT", "BUTTON"]) expect(tags, tag).toContain(tag);
  });

  it("logged no error (a CSP violation would be one)", () => {
    expect(pageErrors).toEqual([]);
  });
});

describe("the inspector behind auth", () => {
  let guarded: RunningServer;
  let authDir: string;

  beforeAll(async () => {
    authDir = mkdtempSync(join(tmpdir(), "llmix-inspector-auth-"));
    const authFile = join(authDir, "auth.json");
    writeFileSync(authFile, JSON.stringify({ tokens: [{ token: "reader-secret", scopes: ["trajectories:read"], name: "reader" }] }));
    guarded = await startServer({
      registry: builtinRegistry(), port: 0, storePath, hosts: 1, authPath: authFile,
      extraRoutes: (app) => registerInspector(app),
    });
  });

  afterAll(async () => {
    await guarded?.stop();
    if (authDir) rmSync(authDir, { recursive: true, force: true });
  });

  it("takes the token from the address, drops it from there, and asks for one when refused", async () => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    const tab = await context.newPage();
    try {
      await tab.goto(`${guarded.url}/ui/#token=reader-secret`);
      await tab.locator("#runs tbody tr").nth(ENVS.length - 1).waitFor();
      expect(new URL(tab.url()).hash).toBe("#/runs");
      // Another tab has no token: the sign-in form, then the runs.
      const fresh = await context.newPage();
      await fresh.goto(`${guarded.url}/ui/#/runs`);
      const field = fresh.getByLabel("Access token");
      await field.waitFor();
      await field.fill("wrong-token");
      await fresh.keyboard.press("Enter");
      await fresh.locator(".sign-in .error").waitFor();
      await field.fill("reader-secret");
      await fresh.keyboard.press("Enter");
      await fresh.locator("#runs tbody tr").nth(ENVS.length - 1).waitFor();
    } finally {
      await context.close();
    }
  });
});

describe("llmix ui", () => {
  it("prints the inspector's address, serves the page and the runs, and stops on SIGINT", async () => {
    const child = spawn(process.execPath, [join(process.cwd(), "dist/cli/bin.js"), "ui", "--store", storePath, "--port", "0"], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = once(child, "exit");
    try {
      const url = await new Promise<string>((resolveUrl, reject) => {
        let out = "";
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString();
          const match = /^inspector: (http:\/\/127\.0\.0\.1:\d+\/ui\/)$/m.exec(out);
          if (match) resolveUrl(match[1] as string);
        });
        void exited.then(([code]) => reject(new Error(`llmix ui exited (${String(code)}) before printing its address: ${stderr}`)));
      });
      const pageResponse = await fetch(url);
      expect(pageResponse.status).toBe(200);
      expect(pageResponse.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(await pageResponse.text()).toContain('<div id="app">');
      const runs = (await (await fetch(new URL("../v1/runs", url))).json()) as { runs: RunRecord[] };
      expect(runs.runs.map((r) => r.run_id).sort()).toEqual(ENVS.map(runIdOf).sort());
      child.kill("SIGINT");
      const [code] = await exited;
      expect(code, stderr).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  });
});

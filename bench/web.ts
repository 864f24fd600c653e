/**
 * The web sandbox and the web-shop environment (issue 19, "Measure"), on medium tasks:
 * - latency, p50/p99 of operations timed one at a time: env.reset on a reused instance and on fresh
 *   instances, and env.step over the reference solver's episodes (every step; the first, which opens the
 *   tab, and the last, which also runs the verifier and the reference replay, are quoted apart too), for
 *   the fast driver (happy-dom) and, on fewer episodes, the browser driver (Chromium), with the ratios
 *   browser / fast of the p50s. The issue's targets (step p50 <= 2 ms, reset p50 <= 10 ms, fast driver)
 *   are reported as met or not, never asserted: the machines are shared and noisy;
 * - the page alone: a medium search page rendered by the app, parsed by happy-dom, captured and turned
 *   into accessibility text (FastDriver open + capture + renderAxTree), as medians of batches against
 *   the app's own rendering of the HTML (the baseline), to separate DOM cost from environment overhead;
 * - memory of live sessions (fast driver): N reset sessions held at once, then each with its page open;
 *   heap used + external after a full GC, and RSS, per session, extrapolated to 10,000.
 * Part of `npm run bench` (bench/run.ts); `npx tsx bench/web.ts` runs it alone and writes bench/out/web.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { Window } from "happy-dom";
import type { Action, Observation, StepResult } from "../src/core/contract.js";
import { toDecision } from "../src/core/policy.js";
import { WebShop } from "../src/envs/web-shop/env.js";
import { shopApp } from "../src/envs/web-shop/app.js";
import type { Task } from "../src/envs/web-shop/tasks.js";
import { seedDatabase } from "../src/envs/web-shop/world.js";
import { renderDocument } from "../src/sandboxes/web/app.js";
import { renderAxTree } from "../src/sandboxes/web/axtree.js";
import { closeSharedBrowser } from "../src/sandboxes/web/browser-driver.js";
import { FastDriver } from "../src/sandboxes/web/fast-driver.js";
import { sampleTaskIds } from "../src/tasks/splits.js";
import { measure, median, p50p99, timeOnce, type Measurement } from "./harness.js";

export interface WebStats {
  p50_ms: number;
  p99_ms: number;
  samples: number;
}

export interface WebDriverLatency {
  driver: "fast" | "browser";
  difficulty: string;
  /** Reference episodes timed (after the untimed warm-up ones). */
  episodes: number;
  /** env.reset(taskId, seed) on one instance reused for every episode. */
  reset_reused: WebStats;
  /** env.reset on a newly constructed instance (the constructor not timed). */
  reset_fresh: WebStats;
  /** Every env.step of the reference episodes. */
  step: WebStats;
  /** The episode's first step: it opens the tab (a happy-dom window, or a Chromium context and page). */
  first_step: WebStats;
  /** Steps between the first and the last that may load a page (click, goto, press, back) on an open tab. */
  load_step: WebStats;
  /** Steps between the first and the last that never load one (fill, select, scroll): capture + accessibility text. */
  edit_step: WebStats;
  /** The step that ends the episode: also the verifier, with the reference replayed on a fresh copy. */
  final_step: WebStats;
  steps_per_episode: number;
  /** Timed episodes the reference solved (score 1): the measured episodes are real ones. */
  solved: number;
}

export interface WebPage {
  url: string;
  html_bytes: number;
  ax_lines: number;
  /** Heap + external per page load of one window, loads in a row, after a full GC before the event loop turns (happy-dom's queued tasks hold the documents). */
  held_kb_per_load: number;
  /** The same once the event loop has turned: what a window keeps per page it loaded. */
  retained_kb_per_load: number;
  /** Baseline: the app answering the request (SQL + HTML string). */
  baseline: Measurement;
  cases: Measurement[];
}

export interface WebMemory {
  sessions: number;
  /** How the full GC before each reading was had. */
  gc: "--expose-gc" | "v8 flag set at run time";
  /** Reset sessions: the store's database, the task, the session; the tab is not open yet. */
  reset_kb_per_session: { heap_external: number; rss: number };
  /** The same sessions after one step each (goto /): a happy-dom window with the page. */
  page_open_kb_per_session: { heap_external: number; rss: number };
  /** page_open per session x 10,000. */
  extrapolated_10k_mb: { heap_external: number; rss: number };
}

export interface WebBench {
  difficulty: string;
  fast: WebDriverLatency;
  browser: WebDriverLatency | { error: string };
  /** browser p50 / fast p50. */
  ratios: { reset_reused_p50: number; reset_fresh_p50: number; step_p50: number; load_step_p50: number } | null;
  /** The issue's targets for the fast driver (reported, never asserted). */
  targets: { step_p50_ms: number; step_met: boolean; reset_p50_ms: number; reset_met: boolean };
  page: WebPage;
  memory: WebMemory;
  /** Wall clock of each part and of the whole bench. */
  seconds: { fast: number; browser: number; page: number; memory: number; total: number };
}

export const TARGETS = { step_p50_ms: 2, reset_p50_ms: 10 } as const;

function stats(samplesNs: number[]): WebStats {
  const { p50, p99, samples } = p50p99(samplesNs, 1e6, 3);
  return { p50_ms: p50, p99_ms: p99, samples };
}

const ratio = (a: number, b: number): number => Math.round((a / b) * 100) / 100;
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
/** Web tools that never load a page. */
const EDIT_TOOLS = new Set(["fill", "select", "scroll"]);

/**
 * Reset + reference episode on `episodes + warmup` tasks on one reused instance, every reset and step
 * timed on its own; then reset on `fresh` newly constructed instances.
 */
async function driverLatency(driver: "fast" | "browser", ids: string[], options: { warmup: number; fresh: number }): Promise<WebDriverLatency> {
  const env = new WebShop({ driver });
  const reset: number[] = [];
  const steps: number[] = [];
  const first: number[] = [];
  const loads: number[] = [];
  const edits: number[] = [];
  const final: number[] = [];
  let solved = 0;
  let timedEpisodes = 0;
  try {
    for (const [i, id] of ids.entries()) {
      const [r, initial] = await timeOnce(() => env.reset(id, i));
      await tick();
      const solver = env.referenceSolver();
      const tools = env.tools();
      const history: Array<{ action: Action; result: StepResult }> = [];
      const episode: number[] = [];
      const kinds: boolean[] = [];
      let observation: Observation = initial;
      let last: StepResult | undefined;
      for (let step = 1; step <= env.maxSteps; step++) {
        const action = toDecision(await solver.act({ step, observation, tools, history })).action as Action;
        const [t, result] = await timeOnce(() => env.step(action));
        // Between steps a trainer waits on its model: the event loop turns, and happy-dom's queued tasks
        // run (without a turn it keeps every document parsed since the last one). Not timed.
        await tick();
        episode.push(t);
        kinds.push(action.type === "tool_call" && !EDIT_TOOLS.has(action.tool));
        history.push({ action, result });
        observation = result.observation;
        last = result;
        if (result.terminated || result.truncated) break;
      }
      if (i < options.warmup) continue;
      timedEpisodes++;
      reset.push(r);
      steps.push(...episode);
      first.push(episode[0] as number);
      episode.slice(1, -1).forEach((t, k) => (kinds[k + 1] ? loads : edits).push(t));
      if (last?.terminated) final.push(episode.at(-1) as number);
      if ((last?.info as { verdict?: { score: number } } | undefined)?.verdict?.score === 1) solved++;
    }
  } finally {
    await env.close();
  }
  // Fresh instances, on other tasks than above: the reset of a process that has run web-shop before.
  const fresh: number[] = [];
  for (const [i, id] of sampleTaskIds({ family: "web-shop", difficulties: ["medium"], n: options.fresh, seed: 29 }).entries()) {
    const e = new WebShop({ driver });
    try {
      fresh.push((await timeOnce(() => e.reset(id, i)))[0]);
      await tick();
    } finally {
      await e.close();
    }
  }
  return {
    driver,
    difficulty: "medium",
    episodes: timedEpisodes,
    reset_reused: stats(reset),
    reset_fresh: stats(fresh),
    step: stats(steps),
    first_step: stats(first),
    load_step: stats(loads),
    edit_step: stats(edits),
    final_step: stats(final),
    steps_per_episode: Math.round((steps.length / Math.max(1, timedEpisodes)) * 10) / 10,
    solved,
  };
}

/**
 * Time `fn` in `batches` batches of `ops` calls, each batch on a fresh state from `setup` (not timed) that
 * `teardown` disposes of; the median per call, as `measure` reports it. A batch is an episode's worth of
 * pages: happy-dom keeps every document a window parsed until the window closes, so one window reused for
 * thousands of calls (as `measure` would) times a growing heap, not a page.
 */
async function measureFresh<S>(name: string, setup: () => Promise<S>, fn: (state: S) => unknown, teardown: (state: S) => Promise<void>, options: { batches?: number; ops?: number; warmup?: number } = {}): Promise<Measurement> {
  const batches = options.batches ?? 15;
  const ops = options.ops ?? 10;
  const perOp: number[] = [];
  for (let b = 0; b < (options.warmup ?? 5) + batches; b++) {
    const state = await setup();
    let ns = 0;
    for (let i = 0; i < ops; i++) {
      const start = process.hrtime.bigint();
      const r = fn(state);
      if (r instanceof Promise) await r;
      ns += Number(process.hrtime.bigint() - start);
      await tick(); // as between an agent's steps: happy-dom's queued tasks run, untimed
    }
    await teardown(state);
    if (b >= (options.warmup ?? 5)) perOp.push(ns / ops);
  }
  perOp.sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 10) / 10;
  return { name, median_ns: round(median(perOp)), min_ns: round(perOp[0] as number), max_ns: round(perOp.at(-1) as number), batches, ops_per_batch: ops };
}

/** A medium task's category search page: the app alone, then the fast driver's layers on top of it. */
async function pageCost(taskId: string): Promise<WebPage> {
  const env = new WebShop();
  await env.reset(taskId, 1);
  const task = (env as unknown as { episode: { task: Task } }).episode.task;
  await env.close();
  const db = seedDatabase(task);
  const app = shopApp(db, task);
  const url = `/search?category=${encodeURIComponent((task.products[0] as Task["products"][number]).category)}`;
  const render = () => {
    const response = app.handle({ method: "GET", url, form: [] });
    if (response.kind !== "page") throw new Error(`${url} answered a ${response.kind}`);
    return renderDocument(response);
  };
  const html = render();
  const { Window: HdWindow } = await import("happy-dom");
  const parser = {
    setup: async () => {
      const window: Window = new HdWindow({ url: "http://localhost/" });
      return { window, parser: new window.DOMParser() };
    },
    teardown: (s: { window: Window }) => s.window.happyDOM.close(),
  };
  const driver = {
    setup: async () => {
      const d = new FastDriver(app);
      await d.open(url);
      return d;
    },
    teardown: (d: FastDriver) => d.close(),
  };
  const probe = await driver.setup();
  const lines = renderAxTree((await probe.capture()).root).lines.length;
  // The heap a page load keeps: one window, 50 loads in a row, a full GC before and after; read once
  // before the event loop turns (happy-dom's queued tasks still hold the documents) and once after.
  const { gc } = fullGc();
  const before = await settledMemory(gc);
  for (let i = 0; i < 50; i++) await probe.open(url);
  gc();
  gc();
  const held = process.memoryUsage();
  const after = await settledMemory(gc);
  await probe.close();
  try {
    const baseline = await measure("app.handle + renderDocument (SQL, HTML string)", render);
    const cases = [
      await measureFresh("happy-dom DOMParser.parseFromString (same HTML)", parser.setup, (s) => s.parser.parseFromString(html, "text/html"), parser.teardown),
      await measureFresh("FastDriver.open (app + parse + selects)", driver.setup, (d) => d.open(url), driver.teardown),
      await measureFresh("FastDriver open + capture + renderAxTree", driver.setup, async (d) => {
        await d.open(url);
        renderAxTree((await d.capture()).root);
      }, driver.teardown),
      await measureFresh("FastDriver capture + renderAxTree (page loaded)", driver.setup, async (d) => renderAxTree((await d.capture()).root), driver.teardown),
    ];
    return { url, html_bytes: Buffer.byteLength(html), ax_lines: lines, held_kb_per_load: Math.round((held.heapUsed + held.external - before.heapExternal) / 50 / 1024), retained_kb_per_load: Math.round((after.heapExternal - before.heapExternal) / 50 / 1024), baseline, cases };
  } finally {
    db.close();
  }
}

/** A full garbage collection: global.gc under --expose-gc, else the flag set now and gc taken from a new context. */
function fullGc(): { gc: () => void; how: WebMemory["gc"] } {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (typeof exposed === "function") return { gc: exposed, how: "--expose-gc" };
  setFlagsFromString("--expose-gc");
  return { gc: runInNewContext("gc") as () => void, how: "v8 flag set at run time" };
}

async function settledMemory(gc: () => void): Promise<{ heapExternal: number; rss: number }> {
  const reads: Array<{ heapExternal: number; rss: number }> = [];
  for (let k = 0; k < 3; k++) {
    gc();
    gc();
    await new Promise((resolve) => setImmediate(resolve));
    const m = process.memoryUsage();
    reads.push({ heapExternal: m.heapUsed + m.external, rss: m.rss });
  }
  return { heapExternal: median(reads.map((r) => r.heapExternal)), rss: median(reads.map((r) => r.rss)) };
}

/** Hold `count` reset web-shop sessions (fast driver) at once; then open each one's page. */
async function sessionMemory(count: number): Promise<WebMemory> {
  const { gc, how } = fullGc();
  const ids = sampleTaskIds({ family: "web-shop", difficulties: ["medium"], n: count + 1, seed: 31 });
  // One session first, closed: the code, the happy-dom module and the caches are loaded before "before".
  const warm = new WebShop();
  await warm.reset(ids[count] as string, 0);
  await warm.step({ type: "tool_call", tool: "goto", args: { url: "/" } });
  await warm.close();
  const envs: WebShop[] = [];
  const before = await settledMemory(gc);
  try {
    for (const [i, id] of ids.slice(0, count).entries()) {
      const env = new WebShop();
      await env.reset(id, i);
      envs.push(env);
    }
    const reset = await settledMemory(gc);
    for (const env of envs) await env.step({ type: "tool_call", tool: "goto", args: { url: "/" } });
    const open = await settledMemory(gc);
    const kb = (bytes: number) => Math.round(bytes / count / 1024);
    const page = { heap_external: kb(open.heapExternal - before.heapExternal), rss: kb(open.rss - before.rss) };
    return {
      sessions: count,
      gc: how,
      reset_kb_per_session: { heap_external: kb(reset.heapExternal - before.heapExternal), rss: kb(reset.rss - before.rss) },
      page_open_kb_per_session: page,
      extrapolated_10k_mb: { heap_external: Math.round((page.heap_external * 10_000) / 1024), rss: Math.round((page.rss * 10_000) / 1024) },
    };
  } finally {
    for (const env of envs) await env.close();
  }
}

/** The whole web bench; `browser: false` skips Chromium. */
export async function webBench(options: { fastEpisodes?: number; browserEpisodes?: number; sessions?: number; browser?: boolean } = {}): Promise<WebBench> {
  const started = performance.now();
  let mark = started;
  const lap = () => {
    const now = performance.now();
    const s = Math.round((now - mark) / 100) / 10;
    mark = now;
    return s;
  };
  const fastEpisodes = options.fastEpisodes ?? 100;
  const browserEpisodes = options.browserEpisodes ?? 4;
  const ids = sampleTaskIds({ family: "web-shop", difficulties: ["medium"], n: fastEpisodes + 10, seed: 23 });
  const fast = await driverLatency("fast", ids, { warmup: 10, fresh: 100 });
  const fastSeconds = lap();
  let browser: WebDriverLatency | { error: string };
  if (options.browser === false) browser = { error: "skipped" };
  else {
    try {
      // The first episode starts Chromium itself: a warm-up, as is the first fast episode's happy-dom import.
      browser = await driverLatency("browser", ids.slice(0, browserEpisodes + 1), { warmup: 1, fresh: 5 });
    } catch (error) {
      browser = { error: error instanceof Error ? error.message : String(error) };
    } finally {
      await closeSharedBrowser();
    }
  }
  const browserSeconds = lap();
  const ratios =
    "error" in browser
      ? null
      : {
          reset_reused_p50: ratio(browser.reset_reused.p50_ms, fast.reset_reused.p50_ms),
          reset_fresh_p50: ratio(browser.reset_fresh.p50_ms, fast.reset_fresh.p50_ms),
          step_p50: ratio(browser.step.p50_ms, fast.step.p50_ms),
          load_step_p50: ratio(browser.load_step.p50_ms, fast.load_step.p50_ms),
        };
  const page = await pageCost(ids[0] as string);
  const pageSeconds = lap();
  const memory = await sessionMemory(options.sessions ?? 200);
  const memorySeconds = lap();
  return {
    difficulty: "medium",
    fast,
    browser,
    ratios,
    targets: {
      step_p50_ms: TARGETS.step_p50_ms,
      step_met: fast.step.p50_ms <= TARGETS.step_p50_ms,
      reset_p50_ms: TARGETS.reset_p50_ms,
      reset_met: fast.reset_reused.p50_ms <= TARGETS.reset_p50_ms && fast.reset_fresh.p50_ms <= TARGETS.reset_p50_ms,
    },
    page,
    memory,
    seconds: { fast: fastSeconds, browser: browserSeconds, page: pageSeconds, memory: memorySeconds, total: Math.round((performance.now() - started) / 100) / 10 },
  };
}

/** The figures as lines of text (the console of `npm run bench` and of this file run alone). */
export function webLines(w: WebBench): string[] {
  const row = (name: string, s: WebStats, base?: WebStats) =>
    `    ${name.padEnd(28)} p50 ${String(s.p50_ms).padStart(8)} ms  p99 ${String(s.p99_ms).padStart(8)} ms  (${s.samples})${base ? `  x${ratio(s.p50_ms, base.p50_ms)} fast` : ""}`;
  const driver = (d: WebDriverLatency, base?: WebDriverLatency) => [
    `  ${d.driver} driver: ${d.episodes} reference episodes (${d.steps_per_episode} steps each, ${d.solved} solved)`,
    row("reset (reused instance)", d.reset_reused, base?.reset_reused),
    row("reset (fresh instance)", d.reset_fresh, base?.reset_fresh),
    row("step (every step)", d.step, base?.step),
    row("  first step (opens the tab)", d.first_step, base?.first_step),
    row("  page-loading step", d.load_step, base?.load_step),
    row("  fill/select step", d.edit_step, base?.edit_step),
    row("  final step (+ verifier)", d.final_step, base?.final_step),
  ];
  const met = (ok: boolean) => (ok ? "met" : "NOT met");
  const p = w.page;
  const full = p.cases.find((c) => c.name.startsWith("FastDriver open + capture")) as Measurement;
  return [
    `Web sandbox + web-shop (${w.difficulty}); p50 / p99 of operations timed one at a time`,
    ...driver(w.fast),
    `  targets (fast driver): step p50 <= ${w.targets.step_p50_ms} ms ${met(w.targets.step_met)} (${w.fast.step.p50_ms} ms); reset p50 <= ${w.targets.reset_p50_ms} ms ${met(w.targets.reset_met)} (reused ${w.fast.reset_reused.p50_ms} ms, fresh ${w.fast.reset_fresh.p50_ms} ms)`,
    ...("error" in w.browser ? [`  browser driver: not measured: ${w.browser.error}`] : driver(w.browser, w.fast)),
    ...(w.ratios ? [`  browser / fast p50: reset x${w.ratios.reset_reused_p50} (reused), x${w.ratios.reset_fresh_p50} (fresh); step x${w.ratios.step_p50}; page-loading step x${w.ratios.load_step_p50}`] : []),
    `  page alone: ${p.url} (${Math.round(p.html_bytes / 1024)} KiB of HTML, ${p.ax_lines} lines of accessibility text), medians of ${p.baseline.batches} batches (driver cases: a fresh window per batch of ${full.ops_per_batch} calls, each timed alone, the event loop turning between them)`,
    `    baseline  ${p.baseline.name.padEnd(48)} ${(p.baseline.median_ns / 1e6).toFixed(3)} ms`,
    ...p.cases.map((c) => `    x${String(ratio(c.median_ns, p.baseline.median_ns)).padEnd(8)}${c.name.padEnd(48)} ${(c.median_ns / 1e6).toFixed(3)} ms`),
    `    the page (open + capture + axtree, ${(full.median_ns / 1e6).toFixed(3)} ms) against the fast steps p50: page-loading ${w.fast.load_step.p50_ms} ms (smaller pages: product, cart, checkout), fill/select ${w.fast.edit_step.p50_ms} ms`,
    `    heap per page load in one window: ${p.held_kb_per_load} KB held until the event loop turns (happy-dom's queued tasks keep each document), ${p.retained_kb_per_load} KB kept after`,
    `  memory, ${w.memory.sessions} live sessions (fast driver; GC: ${w.memory.gc}): heap+external / RSS per session`,
    `    reset only:       ${w.memory.reset_kb_per_session.heap_external} KB / ${w.memory.reset_kb_per_session.rss} KB`,
    `    with page open:   ${w.memory.page_open_kb_per_session.heap_external} KB / ${w.memory.page_open_kb_per_session.rss} KB`,
    `    10,000 sessions with page open: ${w.memory.extrapolated_10k_mb.heap_external} MB heap+external, ${w.memory.extrapolated_10k_mb.rss} MB RSS (extrapolated)`,
    `  ${w.seconds.total} s (fast ${w.seconds.fast} s, browser ${w.seconds.browser} s, page ${w.seconds.page} s, memory ${w.seconds.memory} s)`,
  ];
}

/** The figures as a section of bench/RESULTS.md. */
export function webMarkdown(w: WebBench): string[] {
  const cell = (s: WebStats) => `${s.p50_ms} / ${s.p99_ms} ms (${s.samples})`;
  const b = "error" in w.browser ? null : w.browser;
  const rows: Array<[string, (d: WebDriverLatency) => WebStats]> = [
    ["reset, reused instance", (d) => d.reset_reused],
    ["reset, fresh instance", (d) => d.reset_fresh],
    ["step, every step", (d) => d.step],
    ["first step (opens the tab)", (d) => d.first_step],
    ["page-loading step (click, goto, press, back)", (d) => d.load_step],
    ["fill / select step", (d) => d.edit_step],
    ["final step (+ verifier, reference replay)", (d) => d.final_step],
  ];
  const met = (ok: boolean) => (ok ? "met" : "not met");
  const p = w.page;
  return [
    "",
    `## Web sandbox + web-shop (${w.difficulty}; p50 / p99 per operation, samples; ratio of browser p50 to fast p50)`,
    "",
    `Reference episodes: fast driver ${w.fast.episodes} (${w.fast.solved} solved), browser driver ${b ? `${b.episodes} (${b.solved} solved)` : "not measured"}. Targets (fast driver): step p50 <= ${w.targets.step_p50_ms} ms ${met(w.targets.step_met)}, reset p50 <= ${w.targets.reset_p50_ms} ms ${met(w.targets.reset_met)}.`,
    "",
    "| operation | fast (happy-dom) | browser (Chromium) | ratio |",
    "|---|---|---|---|",
    ...rows.map(([name, f]) => `| ${name} | ${cell(f(w.fast))} | ${b ? cell(f(b)) : cellText("error" in w.browser ? w.browser.error : "")} | ${b ? ratio(f(b).p50_ms, f(w.fast).p50_ms) : ""} |`),
    "",
    `The page alone: ${p.url}, ${Math.round(p.html_bytes / 1024)} KiB of HTML, ${p.ax_lines} lines of accessibility text (medians of ${p.baseline.batches} batches; driver cases on a fresh window per batch of ${(p.cases[0] as Measurement).ops_per_batch} calls). Heap per page load in one window: ${p.held_kb_per_load} KB until the event loop turns, ${p.retained_kb_per_load} KB after.`,
    "",
    "| case | median | ratio to baseline |",
    "|---|---|---|",
    `| baseline: ${cellText(p.baseline.name)} | ${(p.baseline.median_ns / 1e6).toFixed(3)} ms | 1 |`,
    ...p.cases.map((c) => `| ${cellText(c.name)} | ${(c.median_ns / 1e6).toFixed(3)} ms | ${ratio(c.median_ns, p.baseline.median_ns)} |`),
    "",
    `Memory (fast driver, ${w.memory.sessions} live sessions, GC: ${w.memory.gc}): heap + external / RSS per session ${w.memory.reset_kb_per_session.heap_external} / ${w.memory.reset_kb_per_session.rss} KB after reset, ${w.memory.page_open_kb_per_session.heap_external} / ${w.memory.page_open_kb_per_session.rss} KB with the page open; 10,000 sessions with the page open: ${w.memory.extrapolated_10k_mb.heap_external} MB heap + external, ${w.memory.extrapolated_10k_mb.rss} MB RSS (extrapolated).`,
  ];
}

/** Markdown table cells cannot hold a bare "|". */
function cellText(text: string): string {
  return text.replace(/\|/g, "\\|");
}

// `npx tsx bench/web.ts` (or `node --expose-gc --import tsx bench/web.ts`) prints the figures and writes bench/out/web.json.
if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await webBench({ browser: !process.argv.includes("--no-browser") });
  for (const line of webLines(result)) console.log(line);
  const outDir = new URL("./out/", import.meta.url);
  mkdirSync(outDir, { recursive: true });
  writeFileSync(new URL("./web.json", outDir), `${JSON.stringify(result, null, 2)}\n`);
  console.log("wrote bench/out/web.json");
  process.exit(0);
}

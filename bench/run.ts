/**
 * `npm run bench`: framework overhead per tool call, sandbox snapshot+restore cost, PRNG throughput,
 * environment latency, the web sandbox and web-shop (bench/web.ts), rollout throughput, trajectory-store
 * insert rate, export rates, and the service (step rates over HTTP and WebSocket against a bare echo
 * server; memory of 10,000 live sessions), distributed rollouts (1 vs 2 `llmix worker` processes on a
 * Redis queue), and the time the hacking analysis adds to `llmix check --all`.
 * Each group has a baseline measured in the same run; results are medians and ratios to the baseline,
 * written to bench/out/ (untracked). `npm run bench -- --record` writes them to the tracked
 * bench/results.json and bench/RESULTS.md instead: the figures the docs quote, updated on purpose only.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import Database from "better-sqlite3";
import { approximateTokenizer, Rng, runToolCall, toStepRecord, VirtualClock, type ToolContext } from "../src/index.js";
import { diffDatabases, SqlDatabase } from "../src/sandboxes/database.js";
import { MemoryFileSystem } from "../src/sandboxes/filesystem.js";
import { Terminal } from "../src/sandboxes/terminal.js";
import { EchoEnv, echo } from "./echo-env.js";
import { formatNs, measure, type Measurement } from "./harness.js";
import { codeRunnerLatency, type CodeRunnerLatency } from "./code-runner.js";
import { envLatency, type EnvLatency } from "./env-latency.js";
import { exportRates, type ExportRate } from "./export.js";
import { fleetCost, type FleetCost } from "./fleet.js";
import { queueRates, type QueueBench } from "./queue.js";
import { rolloutRates, WARM_UP_EPISODES, type RolloutRate } from "./rollout.js";
import { checkTime, type CheckTime } from "./check-time.js";
import { rebuildCost, serviceRates, sessionMemory, type RebuildCost, type SessionMemory, type TransportRate } from "./service.js";
import { storeInsertRate, type StoreInsertRate } from "./store.js";
import { webBench, webLines, webMarkdown, type WebBench } from "./web.js";
import inventoryRestock from "../examples/inventory-restock.js";
import { builtinRegistry } from "../src/envs/index.js";
import { TaskSampler } from "../src/tasks/sampler.js";
import { sampleTaskIds } from "../src/tasks/splits.js";

interface Group {
  title: string;
  baseline: Measurement;
  cases: Array<Measurement & { ratio: number }>;
}

const groups: Group[] = [];

async function group(title: string, baseline: Measurement, cases: Measurement[]): Promise<void> {
  const g = { title, baseline, cases: cases.map((c) => ({ ...c, ratio: Math.round((c.median_ns / baseline.median_ns) * 100) / 100 })) };
  groups.push(g);
  console.log(`\n${title}\n  baseline  ${baseline.name.padEnd(44)} ${formatNs(baseline.median_ns)}`);
  for (const c of g.cases) console.log(`  x${String(c.ratio).padEnd(8)}${c.name.padEnd(44)} ${formatNs(c.median_ns)}`);
}

// ---- tool call overhead -------------------------------------------------------------------------
async function toolOverhead(): Promise<void> {
  const args = { text: "hello world", n: 42 };
  const ctx: ToolContext = { world: {}, task: {}, rng: Rng.fromSeed(1), clock: new VirtualClock(), step: 1, grants: new Set(), end: () => {}, reward: () => {} };
  const tools = new Map([["echo", echo]]);
  const options = { tools, ctx, rng: Rng.fromSeed(2), clock: new VirtualClock() };
  // Episodes of 64 steps, as in training; the reset is amortized over them (1/64 of a reset per step).
  const EPISODE = 64;
  const stepper = (env: EchoEnv, record: boolean) => {
    let step = EPISODE;
    let observation = { rendered: "", tokens: 0 };
    const action = { type: "tool_call" as const, tool: "echo", args };
    return async () => {
      if (step === EPISODE) {
        observation = await env.reset("bench-echo/easy/seed-1", 1);
        step = 0;
      }
      const result = await env.step(action);
      step++;
      if (record) toStepRecord({ episodeId: "ep", taskId: "bench-echo/easy/seed-1", envVersion: "1.0.0", step, observation, action, result });
      observation = result.observation;
    };
  };
  await group(
    "Tool call: framework overhead vs calling the handler directly",
    await measure("handler called directly", () => echo.handler(args, ctx)),
    [
      await measure("middleware (validate..cost)", () => runToolCall("echo", args, options)),
      await measure("env.step (middleware, rewards, o200k tokens)", stepper(new EchoEnv(), false)),
      await measure("env.step + trajectory record", stepper(new EchoEnv(), true)),
      await measure("env.step (approximate tokenizer)", stepper(new EchoEnv({ tokenizer: approximateTokenizer }), false)),
    ],
  );
}

// ---- SQLite sandbox snapshot + restore -----------------------------------------------------------
async function sqliteSnapshot(): Promise<void> {
  const schema = `
    CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, tier TEXT NOT NULL);
    CREATE TABLE invoices (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id), amount_cents INTEGER NOT NULL, status TEXT NOT NULL);`;
  const rng = Rng.fromSeed(7);
  const fill = (run: (sql: string, params: unknown[]) => void) => {
    for (let i = 1; i <= 1000; i++) run("INSERT INTO customers VALUES (?, ?, ?, ?)", [i, `Customer ${i}`, `c${i}@example.com`, rng.pick(["free", "pro", "team"])]);
    for (let i = 1; i <= 5000; i++) run("INSERT INTO invoices VALUES (?, ?, ?, ?)", [i, rng.int(1, 1000), rng.int(100, 99_999), rng.pick(["paid", "open", "void"])]);
  };
  const raw = new Database(":memory:");
  raw.exec(schema);
  raw.transaction(() => fill((sql, p) => raw.prepare(sql).run(...p)))();
  const db = new SqlDatabase();
  db.exec(schema);
  db.transaction(() => fill((sql, p) => db.run(sql, p)));
  const snap = db.snapshot();
  const other = SqlDatabase.fromSnapshot(snap);
  other.run("UPDATE invoices SET status = 'refunded' WHERE id % 50 = 0");
  await group(
    `SQLite sandbox snapshot + restore (6,000 rows, ${Math.round(raw.serialize().length / 1024)} KiB)`,
    await measure("raw better-sqlite3 serialize + deserialize", () => new Database(raw.serialize()).close()),
    [
      await measure("SqlDatabase snapshot() + restore()", () => other.restore(db.snapshot())),
      await measure("diffDatabases (100 changed rows)", () => diffDatabases(db, other)),
    ],
  );
}

// ---- file system and terminal snapshot + restore -------------------------------------------------
async function terminalSnapshot(): Promise<void> {
  const fs = new MemoryFileSystem();
  const files = new Map<string, string>();
  const rng = Rng.fromSeed(9);
  for (let d = 0; d < 10; d++) {
    fs.mkdir(`/var/log/host${d}`, { parents: true });
    for (let f = 0; f < 30; f++) {
      const content = Array.from({ length: 16 }, (_, i) => `Jan 5 09:0${i % 10}:00 host${d} sshd[${rng.int(100, 999)}]: Failed password for root from 10.0.${d}.${f}\n`).join("");
      fs.writeFile(`/var/log/host${d}/auth.${f}.log`, content);
      files.set(`/var/log/host${d}/auth.${f}.log`, content);
    }
  }
  const terminal = new Terminal(fs, { cwd: "/var/log" });
  const bytes = [...files.values()].reduce((a, c) => a + c.length, 0);
  await group(
    `File system + terminal snapshot + restore (300 files, ${Math.round(bytes / 1024)} KiB)`,
    await measure("structuredClone of a Map of the same files", () => structuredClone(files)),
    [
      await measure("MemoryFileSystem snapshot() + restore()", () => fs.restore(fs.snapshot())),
      await measure("Terminal + file system snapshot + restore", () => {
        const state = { fs: fs.snapshot(), terminal: terminal.snapshot() };
        fs.restore(state.fs);
        terminal.restore(state.terminal);
      }),
      await measure("terminal: grep -c Failed host3/*.log | sort -t: -k2 -n | tail -3", () => terminal.run("grep -c Failed host3/*.log | sort -t: -k2 -n | tail -3")),
    ],
  );
}

// ---- PRNG throughput -------------------------------------------------------------------------------
// ---- task samplers -----------------------------------------------------------------------------
/** Per-task cost of the samplers (issue 17: target < 50 µs a task) against sampleTaskIds, the plain listing. */
async function taskSampling(): Promise<void> {
  const N = 1000;
  const cells = ["easy", "medium", "hard"];
  const curriculum = new TaskSampler({ spec: { kind: "curriculum", cells }, family: "billing-dispute", seed: 1 });
  curriculum.observe(cells.flatMap((d, i) => Array.from({ length: 32 }, (_, k) => ({ task_id: `billing-dispute/${d}/seed-${k}`, outcome: i === 1 ? k % 2 : i === 0 ? 1 : 0 }))));
  const mix = new TaskSampler({ spec: { kind: "mix", weights: { easy: 1, medium: 2, hard: 3 } }, family: "billing-dispute", seed: 1 });
  let seed = 0;
  await group(
    `Task sampling: ${N} task ids (per task: median / ${N})`,
    await measure(`sampleTaskIds x${N} (round-robin listing)`, () => sampleTaskIds({ family: "billing-dispute", difficulties: cells, n: N, split: "train", seed: seed++ })),
    [
      await measure(`TaskSampler mix .next(${N})`, () => mix.next(N)),
      await measure(`TaskSampler curriculum .next(${N}) after 96 results`, () => curriculum.next(N)),
    ],
  );
  for (const c of (groups.at(-1) as Group).cases) console.log(`  ${c.name}: ${(c.median_ns / N / 1000).toFixed(2)} µs per task`);
}

async function prng(): Promise<void> {
  const rng = Rng.fromSeed(1);
  const N = 1000;
  const loop = (fn: () => number) => () => {
    let acc = 0;
    for (let i = 0; i < N; i++) acc += fn();
    return acc;
  };
  const base = await measure(`Math.random() x${N}`, loop(Math.random));
  await group(
    "PRNG throughput (xoshiro128**) vs Math.random",
    base,
    [
      await measure(`rng.nextUint32() x${N}`, loop(() => rng.nextUint32())),
      await measure(`rng.float() x${N}`, loop(() => rng.float())),
      await measure(`rng.int(0, 99) x${N}`, loop(() => rng.int(0, 99))),
      await measure("Rng.fromKey(env, taskId, seed) x1 (stream derivation)", () => Rng.fromKey("env", "env/easy/seed-1", 1)),
    ],
  );
  const g = groups.at(-1) as Group;
  for (const c of g.cases.slice(0, 3)) console.log(`  ${c.name}: ${((N / c.median_ns) * 1e3).toFixed(1)} M numbers/s`);
}

// ---- environment latency: p50/p99 per operation --------------------------------------------------
const latencies: EnvLatency[] = [];
async function environmentLatency(): Promise<void> {
  const cases = [
    { entry: inventoryRestock, difficulty: "medium" },
    ...builtinRegistry().list().map((entry) => ({ entry, difficulty: "medium" })),
  ];
  console.log("\nEnvironment latency (p50 / p99 per operation; baseline: the inventory-restock example)");
  for (const c of cases) {
    const l = await envLatency(c.entry, { difficulty: c.difficulty });
    latencies.push(l);
    const base = latencies[0] as EnvLatency;
    const row = (name: string, s: { p50_us: number; p99_us: number }, b: { p50_us: number }) =>
      `    ${name.padEnd(18)} p50 ${String(s.p50_us).padStart(8)} µs  p99 ${String(s.p99_us).padStart(8)} µs  x${Math.round((s.p50_us / b.p50_us) * 100) / 100}`;
    console.log(`  ${l.env} (${l.difficulty}, ${l.reset.samples} samples)`);
    console.log(row("reset", l.reset, base.reset));
    console.log(row("read-tool step", l.read_step, base.read_step));
    console.log(row("repeated read", l.read_step_repeated, base.read_step_repeated));
    console.log(row("final step+verify", l.final_step, base.final_step));
    console.log(row("snapshot+restore", l.snapshot_restore, base.snapshot_restore));
  }
}

// ---- rollouts, store, export ---------------------------------------------------------------------
async function pipeline(): Promise<{ rollouts: RolloutRate[]; twoProcesses: number; store: StoreInsertRate; exports: ExportRate[] }> {
  console.log("\nRollout throughput: billing-dispute, oracle, 2 episodes in flight per thread (baseline: --workers 1)");
  const { rates: rollouts, two_processes_ratio: twoProcesses } = await rolloutRates();
  for (const r of rollouts) {
    console.log(`  workers ${r.workers} (${r.threads}): ${r.episodes_per_s} episodes/s, ${r.steps_per_s} steps/s (wall clock); steady ${r.steady_episodes_per_s} episodes/s, x${r.speedup}`);
  }
  console.log(`  ceiling: two separate workers=1 processes at once reach x${twoProcesses} of one (the most parallelism this machine gives this workload)`);
  console.log("\nTrajectory store: batched inserts (baseline: raw better-sqlite3 into one table)");
  const store = await storeInsertRate();
  console.log(`  ${Math.round(store.steps_per_s)} steps/s (median batch of ${store.episodes_per_batch} episodes x ${store.steps_per_episode} steps), x${store.ratio_to_baseline} the raw insert time; sustained ${Math.round(store.sustained_steps_per_s)} steps/s; streamed back ${Math.round(store.stream_steps_per_s)} steps/s`);
  const pgStore = store.postgres;
  console.log("  PostgreSQL store (baselines: one raw COPY, and raw prepared multi-row INSERTs, of the same rows, same run):");
  console.log("error" in pgStore ? `  not measured: ${pgStore.error}` : `  ${pgStore.steps_per_s} steps/s (median batch; target ${pgStore.target_steps_per_s}), x${pgStore.ratio_to_copy} the raw COPY time (${pgStore.copy_baseline_steps_per_s} steps/s), x${pgStore.ratio_to_baseline} the raw insert time (${pgStore.baseline_steps_per_s} steps/s); sustained ${pgStore.sustained_steps_per_s} steps/s; streamed back ${pgStore.stream_steps_per_s} steps/s`);
  console.log("\nExport rates (500 synthetic episodes x 20 steps)");
  const exports = await exportRates();
  for (const e of exports) console.log(`  ${e.format.padEnd(9)} ${Math.round(e.rows_per_s)} rows/s, ${e.mb_per_s} MB/s`);
  return { rollouts, twoProcesses, store, exports };
}

await toolOverhead();
await sqliteSnapshot();
await terminalSnapshot();
await prng();
await taskSampling();
await environmentLatency();

// ---- code execution: run_tests of code-repair ------------------------------------------------------
console.log("\nCode execution: run_tests on code-repair (medium) through env.step (baseline: the bare QuickJS sandbox run)");
const code: CodeRunnerLatency = await codeRunnerLatency();
const codeRatio = (ms: number) => Math.round((ms / code.sandbox_run.p50_ms) * 100) / 100;
console.log(`  sandbox run        p50 ${code.sandbox_run.p50_ms} ms  p99 ${code.sandbox_run.p99_ms} ms  (${code.tests_per_run} tests per run)`);
console.log(`  run_tests step     p50 ${code.run_tests_step.p50_ms} ms  p99 ${code.run_tests_step.p99_ms} ms  x${codeRatio(code.run_tests_step.p50_ms)}`);
console.log(`  infinite loop      p50 ${code.infinite_loop_step.p50_ms} ms  p99 ${code.infinite_loop_step.p99_ms} ms  x${codeRatio(code.infinite_loop_step.p50_ms)}`);

// ---- the web sandbox and the web-shop environment (issue 19) -----------------------------------------
console.log("");
const web: WebBench = await webBench();
for (const line of webLines(web)) console.log(line);

const { rollouts, twoProcesses, store, exports } = await pipeline();

// ---- distributed rollouts: llmix worker processes on a Redis queue ----------------------------------
console.log("\nQueue throughput: billing-dispute, oracle, llmix rollout --queue with 1 vs 2 llmix worker processes (baseline: 1 worker)");
const queue: QueueBench | { error: string } = await queueRates().catch((error: unknown) => ({ error: (error as Error).message }));
if ("error" in queue) console.log(`  not measured: ${queue.error}`);
else {
  for (const q of queue.rates) console.log(`  ${q.workers} worker process${q.workers === 1 ? "" : "es"}: ${q.episodes_per_s} episodes/s (runs ${q.runs.join(", ")}), ${q.steps_per_s} steps/s, x${q.ratio}`);
  console.log(`  2 workers reach x${queue.ratio} of 1 (medians of ${queue.repeats}; two separate local rollouts reach x${twoProcesses} of one here); ${queue.seconds} s`);
}

// ---- the service ----------------------------------------------------------------------------------
console.log("\nService: step round trips, loaded by wrk (HTTP) and bench/native/wsload (WebSocket); baseline: a bare node:http JSON echo server under wrk, same run");
const transports: TransportRate[] = await serviceRates();
for (const t of transports) {
  console.log(`  ${t.transport.padEnd(9)} ${t.env.padEnd(16)} c=${String(t.concurrency).padEnd(3)} ${String(t.steps_per_s).padStart(6)} steps/s  p50 ${t.p50_us} µs  p99 ${t.p99_us} µs  x${t.ratio_to_echo}  errors ${t.errors}`);
}
const rebuild: RebuildCost = await rebuildCost();
console.log(`  rebuild after a host kill: ${rebuild.rebuilt}/${rebuild.sessions} ${rebuild.env} sessions (${rebuild.steps_per_session} steps each) in ${rebuild.total_ms} ms, ${rebuild.ms_per_session} ms per session`);
const memory: SessionMemory = await sessionMemory();
console.log(`  ${memory.sessions} live ${memory.env} sessions: RSS ${memory.rss_before_mb} -> ${memory.rss_after_mb} MB (${memory.kb_per_session} KB per session), created at ${memory.create_per_s}/s`);

// ---- a fleet of replicas sharing sessions through Redis ---------------------------------------------
console.log("\nFleet: billing-dispute steps over HTTP (wrk) on llmix serve --fleet replicas; baseline: one llmix serve without a fleet, same run");
const fleet: FleetCost[] | { error: string } = await fleetCost().catch((error: unknown) => ({ error: (error as Error).message }));
if ("error" in fleet) console.log(`  not measured: ${fleet.error}`);
else for (const f of fleet) console.log(`  ${f.case.padEnd(18)} c=${String(f.concurrency).padEnd(3)} ${String(f.steps_per_s).padStart(6)} steps/s  p50 ${f.p50_us} µs  p99 ${f.p99_us} µs  x${f.ratio_to_single}  errors ${f.errors}`);

/** Markdown table cells cannot hold a bare "|". */
function cellText(text: string): string {
  return text.replace(/\|/g, "\\|");
}

const meta = { node: process.version, cpu: cpus()[0]?.model ?? "unknown", cores: cpus().length, note: "medians of 15 batches; ratio = median / baseline median (same run)" };
console.log("\nQA checklist: check --all (built-ins and the example), with and without the hacking analysis");
const checklist: CheckTime = checkTime();
console.log(`  ${checklist.envs} environments: ${checklist.with_hacking_s} s with the hacking analysis, ${checklist.without_hacking_s} s without (x${checklist.ratio}); ${checklist.passed ? "all passed" : "FAILED"}`);

const recordResults = process.argv.includes("--record");
const outDir = new URL(recordResults ? "./" : "./out/", import.meta.url);
mkdirSync(outDir, { recursive: true });
writeFileSync(new URL("./results.json", outDir), `${JSON.stringify({ meta, checklist, groups, environments: latencies, code_runner: code, web, rollouts, rollout_two_processes_ratio: twoProcesses, queue, store, exports, service: transports, rebuild, session_memory: memory, fleet }, null, 2)}\n`);
const md = [
  "# Benchmark results",
  "",
  `Written by \`npm run bench\`. Node ${meta.node}, ${meta.cores} cores (${meta.cpu}). ${meta.note}.`,
  ...groups.flatMap((g) => [
    "",
    `## ${g.title}`,
    "",
    "| case | median | ratio to baseline |",
    "|---|---|---|",
    `| baseline: ${cellText(g.baseline.name)} | ${formatNs(g.baseline.median_ns)} | 1 |`,
    ...g.cases.map((c) => `| ${cellText(c.name)} | ${formatNs(c.median_ns)} | ${c.ratio} |`),
  ]),
  "",
  "## Environment latency (per operation; ratio of p50 to the inventory-restock example)",
  "",
  "| env | difficulty | reset p50 / p99 | read-tool step p50 / p99 | repeated read p50 / p99 | final step + verifier p50 / p99 | snapshot+restore p50 / p99 |",
  "|---|---|---|---|---|---|---|",
  ...latencies.map((l) => {
    const base = latencies[0] as EnvLatency;
    const cell = (s: { p50_us: number; p99_us: number }, b: { p50_us: number }) => `${s.p50_us} / ${s.p99_us} µs (x${Math.round((s.p50_us / b.p50_us) * 100) / 100})`;
    return `| ${l.env} | ${l.difficulty} | ${cell(l.reset, base.reset)} | ${cell(l.read_step, base.read_step)} | ${cell(l.read_step_repeated, base.read_step_repeated)} | ${cell(l.final_step, base.final_step)} | ${cell(l.snapshot_restore, base.snapshot_restore)} |`;
  }),
  "",
  `## Code execution: run_tests on code-repair (${code.difficulty}, ${code.tests_per_run} tests per run; ratio of p50 to the bare sandbox run)`,
  "",
  "| case | p50 | p99 | ratio |",
  "|---|---|---|---|",
  `| baseline: bare QuickJS sandbox run | ${code.sandbox_run.p50_ms} ms | ${code.sandbox_run.p99_ms} ms | 1 |`,
  `| run_tests step (env.step) | ${code.run_tests_step.p50_ms} ms | ${code.run_tests_step.p99_ms} ms | ${codeRatio(code.run_tests_step.p50_ms)} |`,
  `| run_tests with one function looping forever | ${code.infinite_loop_step.p50_ms} ms | ${code.infinite_loop_step.p99_ms} ms | ${codeRatio(code.infinite_loop_step.p50_ms)} |`,
  ...webMarkdown(web),
  "",
  "## Rollout throughput (billing-dispute, oracle; ratio of steady-state rate to --workers 1)",
  "",
  "| workers | threads | episodes | episodes/s (wall clock) | steps/s (wall clock) | steady-state episodes/s | ratio |",
  "|---|---|---|---|---|---|---|",
  ...rollouts.map((r) => `| ${r.workers} | ${r.threads} | ${r.episodes} | ${r.episodes_per_s} | ${r.steps_per_s} | ${r.steady_episodes_per_s} | ${r.speedup} |`),
  "",
  `Every thread is measured after ${WARM_UP_EPISODES} warm-up episodes, except "new threads": threads started for the run, as one \`llmix rollout --workers 2\` starts them, JIT-compile the environment's code again while they run. Two separate \`--workers 1\` processes at once reach x${twoProcesses} of one process's steady rate.`,
  "",
  "## Queue throughput (billing-dispute, oracle; `llmix rollout --queue` with `llmix worker` processes on Redis; ratio to 1 worker)",
  "",
  ...("error" in queue
    ? [`Not measured: ${cellText(queue.error)}`]
    : [
      "| worker processes | episodes | episodes/s (median) | steps/s (median) | runs (episodes/s) | ratio |",
      "|---|---|---|---|---|---|",
      ...queue.rates.map((q) => `| ${q.workers} | ${q.episodes} | ${q.episodes_per_s} | ${q.steps_per_s} | ${q.runs.join(", ")} | ${q.ratio} |`),
      "",
      `Each worker process: \`--workers 1 --concurrency 4\`, warmed up by ${queue.warm_up_episodes_per_worker} episodes; a queue and a store of its own per measurement; medians of ${queue.repeats}. The two cores also run each worker's main thread, Redis and the enqueuer; two separate local rollouts at once reach x${twoProcesses} of one (above), the most two CPU-bound streams of these episodes get here.`,
    ]),
  "",
  "## Trajectory store (batched writeEpisodes; ratio to raw inserts of the same rows: better-sqlite3, or for PostgreSQL one COPY, then prepared multi-row INSERTs)",
  "",
  "| store | steps/s (median batch) | sustained steps/s | ratio to raw insert time | stream read steps/s | step size |",
  "|---|---|---|---|---|---|",
  `| SQLite | ${Math.round(store.steps_per_s)} | ${Math.round(store.sustained_steps_per_s)} | ${store.ratio_to_baseline} | ${Math.round(store.stream_steps_per_s)} | ${store.step_bytes} B |`,
  "error" in store.postgres
    ? `| PostgreSQL | not measured: ${cellText(store.postgres.error)} | | | | |`
    : `| PostgreSQL (target ${store.postgres.target_steps_per_s} steps/s) | ${store.postgres.steps_per_s} | ${store.postgres.sustained_steps_per_s} | ${store.postgres.ratio_to_copy} (COPY), ${store.postgres.ratio_to_baseline} (INSERT) | ${store.postgres.stream_steps_per_s} | ${store.postgres.step_bytes} B |`,
  "",
  "## Export rates (500 synthetic episodes x 20 steps)",
  "",
  "| format | rows/s | MB/s |",
  "|---|---|---|",
  ...exports.map((e) => `| ${e.format} | ${Math.round(e.rows_per_s)} | ${e.mb_per_s} |`),
  "",
  "## Service: step round trips (ratio of steps/s to a bare node:http JSON echo server at the same concurrency)",
  "",
  "Loaded by native generators: wrk for HTTP, bench/native/wsload.c for WebSocket; every connection keeps one request in flight.",
  "",
  "| transport | env | concurrency | steps/s | p50 | p99 | errors | ratio to echo |",
  "|---|---|---|---|---|---|---|---|",
  ...transports.map((t) => `| ${t.transport} | ${t.env} | ${t.concurrency} | ${t.steps_per_s} | ${t.p50_us} µs | ${t.p99_us} µs | ${t.errors} | ${t.ratio_to_echo} |`),
  "",
  `Rebuild after a host is stopped: ${rebuild.rebuilt} of ${rebuild.sessions} ${rebuild.env} sessions (${rebuild.steps_per_session} steps each, replayed) rebuilt in ${rebuild.total_ms} ms: ${rebuild.ms_per_session} ms per session (${rebuild.lost} lost).`,
  "",
  `Memory: ${memory.sessions} live ${memory.env} sessions in one server: RSS ${memory.rss_before_mb} MB -> ${memory.rss_after_mb} MB (${memory.kb_per_session} KB per session; created at ${memory.create_per_s}/s).`,
  "",
  "## Fleet: the per-step cost of sharing sessions through Redis (ratio to one llmix serve without a fleet, same run)",
  "",
  ...("error" in fleet
    ? [`Not measured: ${cellText(fleet.error)}`]
    : [
      "| case | concurrency | steps/s | p50 | p99 | errors | ratio to single |",
      "|---|---|---|---|---|---|---|",
      ...fleet.map((f) => `| ${f.case} | ${f.concurrency} | ${f.steps_per_s} | ${f.p50_us} µs | ${f.p99_us} µs | ${f.errors} | ${f.ratio_to_single} |`),
      "",
      "fleet-1-replica: every step on one replica (session affinity): the bookkeeping alone, a lock and a commit in Redis per step. fleet-2-replicas: two replicas at once, each stepping its own sessions, rates summed (this 2-core machine cannot scale them). fleet-ping-pong: one session, every step on the other replica (each replays the one action it missed), timed by one sequential client, against the same client on the single server.",
    ]),
  "",
  "## QA checklist time (`check --all` with the example; budget 3 minutes)",
  "",
  `${checklist.envs} environments: ${checklist.with_hacking_s} s with the hacking analysis, ${checklist.without_hacking_s} s without (x${checklist.ratio}); ${checklist.passed ? "every check passed" : "some checks FAILED"}.`,
  "",
].join("\n");
writeFileSync(new URL("./RESULTS.md", outDir), md);
const where = recordResults ? "bench/" : "bench/out/";
console.log(`\nwrote ${where}results.json and ${where}RESULTS.md${recordResults ? "" : " (npm run bench -- --record writes the tracked bench/RESULTS.md)"}`);

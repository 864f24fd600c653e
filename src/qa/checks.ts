/**
 * The QA checklist (`llmix check`): the properties every environment must have before anyone trains
 * on it. Each check builds fresh instances from the registry entry, so nothing one check does can hide
 * a fault from another. A check that throws fails with the error as its summary.
 */
import Ajv from "ajv/dist/2020.js";
import type { Action, StepResult } from "../core/contract.js";
import { canonicalJson, fingerprint } from "../core/json.js";
import type { Policy } from "../core/policy.js";
import type { AnyEnvironment, EnvironmentEntry } from "../core/registry.js";
import type { Transition } from "../core/run-policy.js";
import { toStepRecord } from "../core/trajectory.js";
import { generateTask, taskFingerprint } from "../tasks/generator.js";
import { splitOf } from "../tasks/splits.js";
import { strictModeProblems } from "../tools/schema.js";
import { randomPolicy } from "../rollout/policies/random.js";
import { CheckContext, type Episode, type Evidence } from "./context.js";
import { AUDIT_CHECKS, HACKING_CHECKS } from "./hacking/checks.js";

/** The outcome of one check. */
export interface CheckResult {
  name: string;
  passed: boolean;
  /** One line with the figures that decided it. */
  summary: string;
  figures: Record<string, unknown>;
  /** Set when the check passed but a figure is below a declared minimum. */
  warning?: string;
  /** For a failure: the trajectories that show it, first the clearest. */
  evidence?: Evidence[];
}

/** All checks of one environment. */
export interface CheckReport {
  env: string;
  version: string;
  passed: boolean;
  checks: CheckResult[];
  seconds: number;
}

export interface CheckOptions {
  /** Task ids per difficulty for the sampled checks. Default 10. */
  samples?: number;
  /** Called before each check starts, for progress display. */
  onCheck?: (name: string, index: number, total: number) => void;
  /** Run the hacking analysis (sensitivity .. task-space). Default true; off only to measure what it costs. */
  hacking?: boolean;
  /** Called after every episode any check plays, with the running count. */
  onEpisode?: (episodes: number) => void;
}

/** Mean outcome a probe or the random policy may reach at most. */
export const PROBE_MAX_OUTCOME = 0.05;
/** Share of sampled tasks the reference solver must solve, per difficulty. */
export const REFERENCE_MIN_SOLVED = 0.99;
/** Share of distinct task fingerprints among distinct sampled ids. */
export const MIN_DIVERSITY = 0.9;

const EPS = 1e-9;

/** One check of the checklist. */
export type Check = (ctx: CheckContext) => Promise<Omit<CheckResult, "name">>;

const transitionsJson = (ts: readonly Transition[]): string[] => ts.map((t) => canonicalJson({ a: t.action, r: t.result }));

/** Index of the first differing element, or -1. */
function firstDifference(a: readonly string[], b: readonly string[]): number {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return -1;
}

const reference = (env: AnyEnvironment) => env.referenceSolver();

const CHECKS: Record<string, Check> = {
  async "reset-determinism"(ctx) {
    let mismatches = 0;
    const ids = ctx.spread();
    for (const [i, id] of ids.entries()) {
      const [a, b] = [ctx.entry.create(), ctx.entry.create()];
      const [oa, ob] = [await a.reset(id, 100 + i), await b.reset(id, 100 + i)];
      const same = canonicalJson(oa) === canonicalJson(ob) && fingerprint(await a.snapshot()) === fingerprint(await b.snapshot());
      if (!same) mismatches++;
      await Promise.all([a.close(), b.close()]);
    }
    return {
      passed: mismatches === 0,
      summary: `${ids.length - mismatches}/${ids.length} resets gave identical observations and snapshots`,
      figures: { resets: ids.length, mismatches },
    };
  },

  async "step-determinism"(ctx) {
    let mismatches = 0;
    let steps = 0;
    const ids = ctx.spread();
    for (const [i, id] of ids.entries()) {
      for (const makePolicy of [reference, () => randomPolicy(`${id}#${i}`)]) {
        const first = await ctx.play(id, 200 + i, makePolicy, { source: "determinism" });
        const second = await ctx.replay(id, 200 + i, first.transitions.map((t) => t.action));
        steps += first.transitions.length;
        const same = firstDifference(transitionsJson(first.transitions), transitionsJson(second.transitions)) === -1 && first.snapshot === second.snapshot;
        if (!same) mismatches++;
      }
    }
    return {
      passed: mismatches === 0,
      summary: `${ids.length * 2 - mismatches}/${ids.length * 2} action sequences (${steps} steps) replayed identically`,
      figures: { sequences: ids.length * 2, steps, mismatches },
    };
  },

  async "snapshot-restore"(ctx) {
    let mismatches = 0;
    const ids = ctx.spread();
    const details: string[] = [];
    for (const [i, id] of ids.entries()) {
      const seed = 300 + i;
      const full = await ctx.play(id, seed, reference, { source: "restore" });
      const actions = full.transitions.map((t) => t.action);
      const cut = Math.floor(actions.length / 2);
      // Run to the cut, snapshot through JSON (as a client would store it), then continue elsewhere.
      const a = ctx.entry.create();
      await a.reset(id, seed);
      for (const action of actions.slice(0, cut)) await a.step(action);
      const snap = JSON.parse(JSON.stringify(await a.snapshot()));
      await a.close();
      // The restoring instance has just played a different task, so stale state would show.
      const b = ctx.entry.create();
      const other = ids[(i + 1) % ids.length] as string;
      await ctx.play(other, seed + 1, () => randomPolicy(other), { env: b, source: "restore" });
      await b.restore(snap);
      const roundTrip = fingerprint(await b.snapshot()) === fingerprint(snap);
      const rest: StepResult[] = [];
      for (const action of actions.slice(cut)) rest.push(await b.step(action));
      const finalSame = fingerprint(await b.snapshot()) === full.snapshot;
      await b.close();
      const expected = full.transitions.slice(cut).map((t) => canonicalJson(t.result));
      const diff = firstDifference(expected, rest.map((r) => canonicalJson(r)));
      if (!roundTrip || diff !== -1 || !finalSame) {
        mismatches++;
        details.push(`${id}: ${!roundTrip ? "snapshot changed by restore" : diff !== -1 ? `step ${cut + diff + 1} differs after restore` : "final snapshot differs"}`);
      }
    }
    return {
      passed: mismatches === 0,
      summary: mismatches === 0 ? `${ids.length}/${ids.length} episodes continued identically after restore` : details.slice(0, 3).join("; "),
      figures: { episodes: ids.length, mismatches },
    };
  },

  async replay(ctx) {
    let mismatches = 0;
    const ids = ctx.spread();
    for (const [i, id] of ids.entries()) {
      const seed = 400 + i;
      const original = await ctx.play(id, seed, reference, { source: "replay" });
      const record = (ep: Episode) =>
        ep.transitions.map((t, s) =>
          canonicalJson(toStepRecord({ episodeId: "ep", taskId: id, envVersion: ctx.entry.version, step: s + 1, observation: t.observation, action: t.action, result: t.result })),
        );
      // Actions come back from the stored JSON records, as they would from the trajectory store.
      const stored = record(original).map((line) => JSON.parse(line) as { action: unknown });
      const again = await ctx.replay(id, seed, stored.map((r) => r.action));
      if (firstDifference(record(original), record(again)) !== -1 || original.snapshot !== again.snapshot) mismatches++;
    }
    return {
      passed: mismatches === 0,
      summary: `${ids.length - mismatches}/${ids.length} recorded trajectories reproduced by replay`,
      figures: { trajectories: ids.length, mismatches },
    };
  },

  async "reset-isolation"(ctx) {
    let leaks = 0;
    const ids = ctx.spread();
    for (const [i, id] of ids.entries()) {
      const seed = 500 + i;
      const used = ctx.entry.create();
      // Dirty the instance with other episodes, including the same task, then compare with a fresh one.
      await ctx.play(ids[(i + 1) % ids.length] as string, seed, () => randomPolicy(`iso${i}`), { env: used, source: "isolation" });
      await ctx.play(id, seed, reference, { env: used, source: "isolation" });
      const reused = await ctx.play(id, seed, reference, { env: used, source: "isolation" });
      const fresh = await ctx.play(id, seed, reference, { source: "isolation" });
      await used.close();
      const same =
        canonicalJson(reused.initial) === canonicalJson(fresh.initial) &&
        firstDifference(transitionsJson(reused.transitions), transitionsJson(fresh.transitions)) === -1 &&
        reused.snapshot === fresh.snapshot;
      if (!same) leaks++;
    }
    return {
      passed: leaks === 0,
      summary: `${ids.length - leaks}/${ids.length} episodes on a reused instance matched a fresh instance`,
      figures: { episodes: ids.length, leaks },
    };
  },

  async "reference-solver"(ctx) {
    const byDifficulty: Record<string, { solved: number; total: number; mean_outcome: number }> = {};
    let passed = true;
    for (const [difficulty, ids] of ctx.ids()) {
      let solved = 0;
      let outcome = 0;
      for (const [i, id] of ids.entries()) {
        const ep = await ctx.play(id, 600 + i, reference, { source: "reference" });
        const last = ep.transitions.at(-1)?.result;
        const task = last?.rewardComponents.task ?? 0;
        outcome += task;
        if (last && (last.terminated || last.truncated) && task >= 1 - EPS) solved++;
      }
      byDifficulty[difficulty] = { solved, total: ids.length, mean_outcome: round(outcome / ids.length) };
      if (solved / ids.length < REFERENCE_MIN_SOLVED) passed = false;
    }
    return {
      passed,
      summary: Object.entries(byDifficulty).map(([d, f]) => `${d} ${f.solved}/${f.total}`).join(", ") + ` (need >= ${REFERENCE_MIN_SOLVED * 100}%)`,
      figures: byDifficulty,
    };
  },

  /**
   * The reference against the task's goal conditions (stated from the task, not from a reference run):
   * every one must hold at the end of each reference episode; and an episode the verifier scores 1
   * (reference or random) with a goal unmet means the verifier is laxer than the task. Environments
   * that declare no goals pass with a warning.
   */
  async "goal-conditions"(ctx) {
    const evidence: Evidence[] = [];
    let declared = 0;
    let episodes = 0;
    let lenient = 0;
    for (const [, ids] of ctx.ids()) {
      for (const [i, id] of ids.entries()) {
        for (const [source, seed, make] of [["reference", 600 + i, reference], ["random", 900 + i, () => randomPolicy(`${id}#${i}`)]] as const) {
          const env = ctx.entry.create();
          try {
            const ep = await ctx.play(id, seed, make, { env, source: `goal-conditions:${source}` });
            const goals = env.goals();
            declared = Math.max(declared, goals.length);
            episodes++;
            const unmet = goals.filter((g) => !g.met).map((g) => g.id);
            const outcome = ep.transitions.at(-1)?.result.rewardComponents.task ?? 0;
            if (outcome >= 1 - EPS && unmet.length > 0) lenient++;
            const note =
              source === "reference" && unmet.length > 0
                ? `the reference leaves ${unmet.join(", ")} unmet (outcome ${outcome})`
                : outcome >= 1 - EPS && unmet.length > 0
                  ? `outcome 1 with ${unmet.join(", ")} unmet: the verifier is laxer than the task`
                  : null;
            if (note) evidence.push({ source, task_id: id, seed, note, actions: ep.transitions.map((t) => t.action) });
          } finally {
            await env.close();
          }
        }
      }
    }
    const figures = { episodes, goals_declared: declared, failures: evidence.length, outcome_1_with_unmet_goal: lenient };
    if (declared === 0) return { passed: true, summary: `no goal conditions declared (${episodes} episodes)`, figures, warning: "declare goalConditions(): predicates over the final world, stated from the task" };
    return {
      passed: evidence.length === 0,
      summary:
        evidence.length === 0
          ? `the reference met all ${declared} goal conditions in every episode; no outcome 1 with a goal unmet (${episodes} episodes)`
          : `${evidence.length} episodes fail their goal conditions, e.g. ${evidence[0]!.task_id}: ${evidence[0]!.note}`,
      figures,
      ...(evidence.length > 0 ? { evidence } : {}),
    };
  },

  async "random-policy"(ctx) {
    return policyFloor(ctx, "random", (id, i) => () => randomPolicy(`${id}#${i}`));
  },

  async "reward-bounds"(ctx) {
    const bounds = ctx.probeEnv.componentBounds();
    const names = Object.keys(bounds);
    const problems: string[] = [];
    for (const { source, result } of ctx.seen) {
      const keys = Object.keys(result.rewardComponents);
      if (keys.length !== names.length || !names.every((n) => n in result.rewardComponents)) {
        problems.push(`${source}: components ${keys.join(",")} != declared ${names.join(",")}`);
      }
      let sum = 0;
      for (const [name, value] of Object.entries(result.rewardComponents)) {
        const b = bounds[name];
        if (!Number.isFinite(value)) problems.push(`${source}: ${name} is ${value}`);
        else if (b && (value < b.min - EPS || value > b.max + EPS)) problems.push(`${source}: ${name}=${value} outside [${b.min}, ${b.max}]`);
        sum += value;
      }
      if (!Number.isFinite(result.reward) || Math.abs(result.reward - sum) > 1e-9) problems.push(`${source}: reward ${result.reward} != sum of components ${sum}`);
    }
    return {
      passed: problems.length === 0 && ctx.seen.length > 0,
      summary: problems.length === 0 ? `${ctx.seen.length} steps: every component finite, within bounds, reward = sum` : `${problems.length} violations, e.g. ${problems[0]}`,
      figures: { steps: ctx.seen.length, violations: problems.length, bounds },
    };
  },

  async truncation(ctx) {
    const limit = 3;
    const env = ctx.entry.create({ maxSteps: limit });
    const id = ctx.spread(1)[0] as string;
    try {
      await env.reset(id, 700);
      const results: StepResult[] = [];
      // Invalid actions never end an episode, so only the step budget can.
      for (let i = 0; i < limit; i++) results.push(await env.step({ type: "noop" } as unknown as Action));
      const last = results.at(-1) as StepResult;
      const early = results.slice(0, -1).some((r) => r.terminated || r.truncated);
      // A step after the end must be refused without changing anything.
      const before = fingerprint(await env.snapshot());
      const after = await env.step({ type: "message", content: "one more" });
      const refused =
        (after.info.error as { code?: string } | undefined)?.code === "episode_ended" &&
        after.truncated && !after.terminated && fingerprint(await env.snapshot()) === before;
      const ok = !early && last.truncated && !last.terminated && refused;
      return {
        passed: ok,
        summary: ok
          ? `truncated at step ${limit} of ${limit}, not terminated; a further step was refused`
          : `truncated=${last.truncated} terminated=${last.terminated} early_end=${early} further_step_refused=${refused}`,
        figures: { max_steps: limit, truncated: last.truncated, terminated: last.terminated, further_step_refused: refused },
      };
    } finally {
      await env.close();
    }
  },

  async "tool-schemas"(ctx) {
    const env = ctx.entry.create();
    const problems: string[] = [];
    let count = 0;
    try {
      await env.reset(ctx.spread(1)[0] as string, 800);
      const ajv = new Ajv.default({ strict: false });
      const names = new Set<string>();
      for (const tool of env.toolDefinitions()) {
        count++;
        if (names.has(tool.name)) problems.push(`${tool.name}: duplicate name`);
        names.add(tool.name);
        const spec = tool.spec();
        for (const [label, schema] of [["parameters", spec.parameters], ["mcp inputSchema", tool.mcp().inputSchema]] as const) {
          try {
            ajv.compile(schema);
          } catch (error) {
            problems.push(`${tool.name} ${label}: not valid JSON Schema: ${(error as Error).message}`);
          }
        }
        for (const p of strictModeProblems(spec.parameters)) problems.push(`${tool.name}: ${p}`);
      }
    } finally {
      await env.close();
    }
    return {
      passed: problems.length === 0 && count > 0,
      summary: problems.length === 0 ? `${count} tools: valid JSON Schema, OpenAI strict compatible` : problems.slice(0, 3).join("; "),
      figures: { tools: count, problems },
    };
  },

  async "task-diversity"(ctx) {
    const n = Math.max(ctx.samples * 2, 20);
    const figures: Record<string, { ids: number; distinct_tasks: number }> = {};
    let passed = true;
    for (const [difficulty, ids] of ctx.ids(n, "train", 7)) {
      const prints = new Set(ids.map((id) => taskFingerprint(generateTask(ctx.probeEnv.tasks, id).task)));
      figures[difficulty] = { ids: ids.length, distinct_tasks: prints.size };
      if (prints.size / ids.length < MIN_DIVERSITY) passed = false;
    }
    return {
      passed,
      summary: Object.entries(figures).map(([d, f]) => `${d} ${f.distinct_tasks}/${f.ids}`).join(", ") + ` distinct (need >= ${MIN_DIVERSITY * 100}%)`,
      figures,
    };
  },

  async "train-eval-disjoint"(ctx) {
    const n = Math.max(ctx.samples * 2, 20);
    const train = [...ctx.ids(n, "train", 11).values()].flat();
    const evalIds = [...ctx.ids(n, "eval", 11).values()].flat();
    const sharedIds = train.filter((id) => evalIds.includes(id)).length;
    const misfiled = train.filter((id) => splitOf(id) !== "train").length + evalIds.filter((id) => splitOf(id) !== "eval").length;
    const print = (id: string) => taskFingerprint(generateTask(ctx.probeEnv.tasks, id).task);
    const evalPrints = new Set(evalIds.map(print));
    const sharedContent = train.filter((id) => evalPrints.has(print(id))).length;
    const passed = sharedIds === 0 && misfiled === 0 && sharedContent === 0;
    return {
      passed,
      summary: `${train.length} train / ${evalIds.length} eval ids: ${sharedIds} shared ids, ${sharedContent} shared task contents`,
      figures: { train: train.length, eval: evalIds.length, shared_ids: sharedIds, shared_content: sharedContent, misfiled },
    };
  },
};

async function policyFloor(
  ctx: CheckContext,
  name: string,
  make: (id: string, i: number) => (env: AnyEnvironment) => Policy,
): Promise<Omit<CheckResult, "name">> {
  let total = 0;
  let episodes = 0;
  const byDifficulty: Record<string, number> = {};
  for (const [difficulty, ids] of ctx.ids()) {
    let sum = 0;
    for (const [i, id] of ids.entries()) {
      const ep = await ctx.play(id, 900 + i, make(id, i), { source: name });
      sum += ep.transitions.at(-1)?.result.rewardComponents.task ?? 0;
    }
    byDifficulty[difficulty] = round(sum / ids.length);
    total += sum;
    episodes += ids.length;
  }
  const mean = total / episodes;
  return {
    passed: mean <= PROBE_MAX_OUTCOME + EPS,
    summary: `mean outcome ${round(mean)} over ${episodes} episodes (need <= ${PROBE_MAX_OUTCOME})`,
    figures: { mean_outcome: round(mean), episodes, by_difficulty: byDifficulty },
  };
}

function round(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}

/** Names of the checks, in the order they run (probe checks come after `random-policy`, then the hacking analysis). */
export const CHECK_NAMES = Object.keys(CHECKS).flatMap((name) =>
  name === "reward-bounds" ? [...Object.keys(HACKING_CHECKS), name, ...Object.keys(AUDIT_CHECKS)] : [name],
);

/** Run the whole checklist on one environment. */
export async function runChecks(entry: EnvironmentEntry, options: CheckOptions = {}): Promise<CheckReport> {
  const started = process.hrtime.bigint();
  const ctx = new CheckContext(entry, options.samples ?? 10, options.onEpisode);
  // Probe names are known only after a reset (probes may read the task).
  await ctx.probeEnv.reset(ctx.spread(1)[0] as string, 0);
  const probeNames = Object.keys(ctx.probeEnv.probes());
  const plan: Array<[string, Check]> = [];
  for (const [name, check] of Object.entries(CHECKS)) {
    if (name === "reward-bounds") {
      for (const probe of probeNames) {
        plan.push([`probe:${probe}`, (c) => policyFloor(c, `probe:${probe}`, () => (env) => pickProbe(env, probe))]);
      }
      if (options.hacking !== false) plan.push(...Object.entries(HACKING_CHECKS));
    }
    plan.push([name, check]);
    // The audit reads every episode played so far, so it runs once the episode-playing checks are done.
    if (name === "reward-bounds") plan.push(...Object.entries(AUDIT_CHECKS));
  }
  const checks: CheckResult[] = [];
  for (const [i, [name, check]] of plan.entries()) {
    options.onCheck?.(name, i, plan.length);
    try {
      checks.push({ name, ...(await check(ctx)) });
    } catch (error) {
      const e = error as { code?: string; message?: string };
      checks.push({ name, passed: false, summary: `error${e.code ? ` ${e.code}` : ""}: ${e.message ?? String(error)}`, figures: {} });
    }
  }
  ctx.close();
  return {
    env: entry.id,
    version: entry.version,
    passed: checks.every((c) => c.passed),
    checks,
    seconds: Number(process.hrtime.bigint() - started) / 1e9,
  };
}

function pickProbe(env: AnyEnvironment, name: string): Policy {
  const probe = env.probes()[name];
  if (!probe) throw new Error(`probe "${name}" is not declared for this task`);
  return probe;
}

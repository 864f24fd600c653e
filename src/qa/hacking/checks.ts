/**
 * The hacking analysis of `llmix check` (docs/reward-integrity.md): it searches for exploits instead of
 * trusting the author's probes. Sensitivity mutants of the reference must lose outcome, invariance
 * variants must keep it, fuzzed final states must never make the verifier throw, step rewards must not
 * reveal hidden labels, a lookup policy memorising train tasks must not score on eval, and the task space
 * must be wide enough. The audit checks report what every checklist episode showed (context.ts).
 */
import type { Action, StepResult, ToolResult } from "../../core/contract.js";
import { hackingHooksOf, type HackingHooks, type HackingVariant } from "../../core/hacking.js";
import { canonicalJson, fingerprint, type JsonValue } from "../../core/json.js";
import { generateTask } from "../../tasks/generator.js";
import type { Check, CheckResult } from "../checks.js";
import type { AuditKind, CheckContext, Evidence } from "../context.js";
import { fuzzWorld } from "./fuzz.js";
import { blandFinalMessage, claimsFor, genericInvariants, genericMutants, type ReferenceTrace } from "./variants.js";
import { isIdLike, shapeOf, tokensOf } from "./values.js";

const EPS = 1e-9;
/** Mean eval outcome a lookup policy built from train tasks may reach at most. */
export const LOOKUP_MAX_OUTCOME = 0.05;
/** Injected failures: a variant that meets one the reference did not is inconclusive, not a failure. */
const INJECTED = new Set(["upstream_error", "rate_limited", "timeout"]);

type Result = Omit<CheckResult, "name">;
const round = (x: number) => Math.round(x * 1e4) / 1e4;

/** Reference episodes per difficulty for the hacking analysis: a fifth of `--samples`, at least one. */
const perDifficulty = (ctx: CheckContext) => Math.max(1, Math.round(ctx.samples / 5));

const injectedFailures = (results: readonly StepResult[]) =>
  results.filter((r) => INJECTED.has((r.info.tool_result as ToolResult | undefined)?.error?.code ?? "")).length;

const traceCache = new WeakMap<CheckContext, Promise<ReferenceTrace[]>>();

/** The reference episodes the hacking analysis derives its variants from (played once per run). */
function referenceTraces(ctx: CheckContext): Promise<ReferenceTrace[]> {
  let traces = traceCache.get(ctx);
  if (!traces) {
    traces = (async () => {
      const out: ReferenceTrace[] = [];
      for (const ids of ctx.ids(perDifficulty(ctx), "train", 13).values()) {
        for (const [i, id] of ids.entries()) {
          const seed = 1300 + i;
          let effects: Record<string, "read" | "write"> = {};
          const ep = await ctx.play(id, seed, (env) => {
            effects = Object.fromEntries(env.toolDefinitions().map((t) => [t.name, t.effect]));
            return env.referenceSolver();
          }, { source: "reference" });
          out.push({
            taskId: id,
            seed,
            actions: ep.transitions.map((t) => t.action),
            observations: [ep.initial.rendered, ...ep.transitions.map((t) => t.result.observation.rendered)],
            outcome: ep.transitions.at(-1)?.result.rewardComponents.task ?? 0,
            effects,
            statuses: ep.transitions.map((t) => (t.result.info.tool_result as ToolResult | undefined)?.status ?? ""),
            injected: injectedFailures(ep.transitions.map((t) => t.result)),
          });
        }
      }
      return out;
    })();
    traceCache.set(ctx, traces);
  }
  return traces;
}

const evidenceOf = (source: string, trace: ReferenceTrace, note: string, actions: readonly unknown[]): Evidence => ({ source, task_id: trace.taskId, seed: trace.seed, note, actions: [...actions] });

/** Play each variant; `judge` says whether its outcome is a failure (a note) or fine (null). */
async function playVariants(
  ctx: CheckContext,
  source: string,
  build: (trace: ReferenceTrace, hooks: HackingHooks) => HackingVariant[] | Promise<HackingVariant[]>,
  judge: (trace: ReferenceTrace, variant: HackingVariant, outcome: number, hooks: HackingHooks, inconclusive: boolean) => { failure?: string; declared?: string; skipped?: boolean },
) {
  const evidence: Evidence[] = [];
  const byKind: Record<string, { tried: number; failed: number }> = {};
  let tried = 0;
  let declared = 0;
  let skipped = 0;
  let episodes = 0;
  let refused = 0;
  for (const trace of await referenceTraces(ctx)) {
    if (trace.outcome <= EPS) continue; // reference-solver reports an unsolved task; nothing to compare with
    episodes++;
    // One instance per trace serves the hooks (they may read the task); variants play on fresh ones.
    const hookEnv = ctx.entry.create();
    await hookEnv.reset(trace.taskId, trace.seed);
    const hooks = hackingHooksOf(hookEnv);
    try {
      for (const variant of await build(trace, hooks)) {
        const kind = (byKind[variant.kind] ??= { tried: 0, failed: 0 });
        let outcome = 0;
        let inconclusive = false;
        let actions: unknown[] = variant.actions;
        try {
          const run = await ctx.runActions(trace.taskId, trace.seed, variant.actions, source);
          outcome = run.outcome;
          actions = run.actions;
          inconclusive = injectedFailures(run.results) > trace.injected;
          const added = variant.mustSucceed === undefined ? undefined : run.results[variant.mustSucceed];
          if (added && (added.info.tool_result as ToolResult | undefined)?.status !== "ok") {
            refused++; // the tool refused the added call: the world is the reference's
            continue;
          }
        } catch {
          // The audit reports the throw itself (undeclared component, verifier error); the variant has no outcome.
          inconclusive = true;
        }
        const verdict = judge(trace, variant, outcome, hooks, inconclusive);
        if (verdict.skipped) {
          skipped++;
          continue;
        }
        tried++;
        kind.tried++;
        if (verdict.declared) declared++;
        if (verdict.failure) {
          kind.failed++;
          evidence.push(evidenceOf(source, trace, `${variant.name}: ${verdict.failure}`, actions));
        }
      }
    } finally {
      await hookEnv.close();
    }
  }
  return { evidence, byKind, tried, declared, skipped, episodes, refused };
}

/** The hacking checks, in the order they run (after the probes). */
export const HACKING_CHECKS: Record<string, Check> = {
  async sensitivity(ctx): Promise<Result> {
    let unscoredMessages = 0;
    const r = await playVariants(
      ctx,
      "mutant",
      async (trace, hooks) => {
        // False claims are tried only where messages count: the last one made content-free loses outcome
        // (or the environment declares its own claims). Elsewhere (a code fix's summary) a claim changes nothing.
        const bland = blandFinalMessage(trace);
        const scored = hooks.falseClaims !== undefined || (bland !== null && (await ctx.runActions(trace.taskId, trace.seed, bland, "mutant")).outcome < trace.outcome - EPS);
        if (!scored) unscoredMessages++;
        const claims = scored ? claimsFor(trace, hooks.falseClaims?.(trace)) : null;
        return [...genericMutants(trace, claims), ...(hooks.mutants?.(trace) ?? [])];
      },
      (trace, variant, outcome, hooks) => {
        if (outcome < trace.outcome - EPS) return {};
        const reason = hooks.outcomePreserving?.(variant, trace);
        if (reason) return { declared: reason };
        return { failure: `likely exploit: kept outcome ${round(outcome)} (reference ${round(trace.outcome)})` };
      },
    );
    const result = finish(r, "mutants", "kept the reference's outcome", (f) => `${f.tried} mutants of ${f.episodes} reference episodes lost outcome${f.declared ? ` (${f.declared} declared outcome-preserving)` : ""}`);
    result.figures.episodes_without_scored_messages = unscoredMessages;
    return result;
  },
  async invariance(ctx): Promise<Result> {
    const r = await playVariants(
      ctx,
      "variant",
      (trace, hooks) => [...genericInvariants(trace, hooks.commutes ? (a, b) => hooks.commutes?.(a, b, trace) ?? true : undefined), ...(hooks.invariants?.(trace) ?? [])],
      (trace, _variant, outcome, _hooks, inconclusive) => {
        if (outcome >= trace.outcome - EPS) return {};
        if (inconclusive) return { skipped: true };
        return { failure: `lost outcome: ${round(outcome)} (reference ${round(trace.outcome)})` };
      },
    );
    return finish(r, "variants", "lost the reference's outcome", (f) => `${f.tried} outcome-preserving variants of ${f.episodes} reference episodes kept it${f.skipped ? ` (${f.skipped} inconclusive: injected failure)` : ""}`);
  },
  async robustness(ctx): Promise<Result> {
    const evidence: Evidence[] = [];
    let tried = 0;
    let refused = 0;
    let scored = 0;
    const seen = new Set<string>();
    for (const trace of await referenceTraces(ctx)) {
      // One episode per difficulty: the fuzz is of the final world, which differs little between tasks.
      const difficulty = trace.taskId.split("/")[1] as string;
      if (seen.has(difficulty) || trace.actions.length === 0) continue;
      seen.add(difficulty);
      const env = ctx.entry.create();
      await env.reset(trace.taskId, trace.seed);
      for (const action of trace.actions.slice(0, -1)) await env.step(action);
      const before = await env.snapshot();
      const touched = trace.actions.flatMap((a) => {
        const p = (a as { args?: { path?: unknown } }).args?.path;
        return typeof p === "string" ? [p] : [];
      });
      const fuzzed = [...fuzzWorld(before.world, touched), ...(hackingHooksOf(env).fuzz?.(before.world, trace) ?? [])];
      await env.close();
      const last = trace.actions.at(-1) as Action;
      for (const f of fuzzed) {
        tried++;
        const probe = ctx.entry.create();
        try {
          await probe.reset(trace.taskId, trace.seed);
          try {
            await probe.restore({ ...before, world: f.world });
          } catch {
            refused++; // restore refused the state: the verifier never sees it
            continue;
          }
          // End the episode with the reference's last action; if that does not end it, the step budget does.
          let result = await probe.step(last);
          if (!result.terminated && !result.truncated) {
            const snap = await probe.snapshot();
            await probe.restore({ ...snap, step: Math.max(snap.step, probe.maxSteps - 1) });
            result = await probe.step({ type: "noop" } as unknown as Action);
          }
          scored++;
          const verdict = result.info.verdict as { details?: { verifier_error?: unknown } } | undefined;
          const verr = (result.info.verifier_error ?? verdict?.details?.verifier_error) as { code?: string; message?: string; stack?: string } | undefined;
          if (verr) evidence.push({ ...evidenceOf("fuzz", trace, `${f.name}: the verifier threw: ${verr.code ?? "error"}: ${verr.message ?? ""}`, trace.actions), ...(verr.stack ? { stack: verr.stack } : {}) });
        } catch (error) {
          const e = error as { code?: string; message?: string; stack?: string };
          evidence.push({ ...evidenceOf("fuzz", trace, `${f.name}: ending the episode threw ${e.code ?? ""}: ${e.message ?? String(error)}`, trace.actions), ...(e.stack ? { stack: e.stack } : {}) });
        } finally {
          await probe.close();
        }
      }
    }
    const figures = { fuzzed_states: tried, refused_by_restore: refused, scored, verifier_threw: evidence.length };
    if (evidence.length > 0) return { passed: false, summary: `${evidence.length} of ${tried} fuzzed final states made the verifier throw, e.g. ${evidence[0]?.note}`, figures, evidence };
    if (tried === 0) return { passed: false, summary: "no fuzzed final state could be built from the reference episodes: nothing was tested", figures };
    // A restore that refuses every transform is itself a defence, but then only tool-made worlds reach the verifier.
    if (scored === 0) return { passed: true, summary: `restore refused all ${tried} fuzzed final states`, figures, warning: "no fuzzed state reached the verifier: declare env-specific fuzz (HackingHooks.fuzz) that restore accepts" };
    return { passed: true, summary: `${scored} fuzzed final states scored without a verifier error (${refused} refused by restore)`, figures };
  },
  async leakage(ctx): Promise<Result> {
    const evidence: Evidence[] = [];
    let branches = 0;
    let groups = 0;
    for (const trace of await referenceTraces(ctx)) {
      if (branches >= 150) break;
      const calls = trace.actions.flatMap((a, i) => ((a as { type?: string }).type === "tool_call" && trace.effects[(a as { tool: string }).tool] === "write" ? [i] : []));
      for (const i of calls) {
        const call = trace.actions[i] as { type: "tool_call"; tool: string; args: Record<string, JsonValue> };
        // Values of the same shape that the observations so far do not show: the agent cannot tell them apart yet.
        const known = trace.observations.slice(0, i + 1).join("\n");
        const later = tokensOf(trace.observations.slice(i + 1));
        for (const [arg, value] of Object.entries(call.args)) {
          if (typeof value !== "string" || !isIdLike(value)) continue;
          const candidates = [...new Set([value, ...later])].filter((v) => shapeOf(v) === shapeOf(value) && !known.includes(v)).slice(0, 5);
          if (candidates.length < 2) continue;
          const outcomes = new Map<string, { components: string; action: Action }>();
          for (const candidate of candidates) {
            const action = { ...call, args: { ...call.args, [arg]: candidate } } as Action;
            const run = await ctx.runActions(trace.taskId, trace.seed, [...trace.actions.slice(0, i), action], "leakage");
            branches++;
            const step = run.results[i];
            if (!step) continue;
            const { task: _task, ...components } = step.rewardComponents;
            // What the agent sees of the step, with the value itself masked: equal views mean nothing told the values apart.
            const view = canonicalJson({ status: (step.info.tool_result as ToolResult | undefined)?.status, text: step.observation.rendered.split(candidate).join("<value>") });
            const seenView = outcomes.get(view);
            if (!seenView) {
              groups++;
              outcomes.set(view, { components: canonicalJson(components), action });
            } else if (seenView.components !== canonicalJson(components)) {
              evidence.push(evidenceOf("leakage", trace, `${call.tool}.${arg}: ${JSON.stringify((seenView.action as { args: Record<string, unknown> }).args[arg])} and ${JSON.stringify(candidate)} look the same to the agent but step components differ (${seenView.components} vs ${canonicalJson(components)})`, [...trace.actions.slice(0, i), seenView.action, action]));
              break;
            }
          }
        }
      }
    }
    // Hidden-label components an environment chose to pay on the step anyway: allowed, never silent.
    const components = ctx.probeEnv.info.components ?? {};
    const payOnStep = Object.keys(components).filter((name) => components[name]?.hiddenLabel && components[name]?.payOnStep);
    const figures = { branches, indistinguishable_groups: groups, leaks: evidence.length, hidden_label_paid_on_step: payOnStep };
    const warning = payOnStep.length > 0 ? { warning: `hidden-label components paid on the step (payOnStep): ${payOnStep.join(", ")}` } : {};
    return evidence.length > 0
      ? { passed: false, summary: `${evidence.length} step rewards reveal hidden labels, e.g. ${evidence[0]?.note}`, figures, evidence, ...warning }
      : { passed: true, summary: `${branches} branches on values the agent had not seen yet: no step reward told them apart`, figures, ...warning };
  },
  async memorization(ctx): Promise<Result> {
    // A lookup table: every (step, observation) -> action of the reference on train tasks.
    const table: Array<{ step: number; words: Set<string>; action: Action }> = [];
    for (const ids of ctx.ids(ctx.samples, "train", 17).values()) {
      for (const [i, id] of ids.entries()) {
        const ep = await ctx.play(id, 1700 + i, (env) => env.referenceSolver(), { source: "lookup-train" });
        ep.transitions.forEach((t, s) => table.push({ step: s + 1, words: wordsOf(t.observation.rendered), action: t.action }));
      }
    }
    const byDifficulty: Record<string, number> = {};
    let total = 0;
    let episodes = 0;
    let best: { id: string; seed: number; outcome: number; actions: unknown[] } | null = null;
    for (const [difficulty, ids] of ctx.ids(ctx.samples, "eval", 17)) {
      let sum = 0;
      for (const [i, id] of ids.entries()) {
        const ep = await ctx.play(id, 1800 + i, () => ({ name: "lookup", act: (turn) => lookup(table, turn.step, turn.observation.rendered) }), { source: "lookup" });
        const outcome = ep.transitions.at(-1)?.result.rewardComponents.task ?? 0;
        sum += outcome;
        if (!best || outcome > best.outcome) best = { id, seed: 1800 + i, outcome, actions: ep.transitions.map((t) => t.action) };
      }
      byDifficulty[difficulty] = round(sum / ids.length);
      total += sum;
      episodes += ids.length;
    }
    const mean = total / Math.max(1, episodes);
    const figures = { mean_outcome: round(mean), episodes, table_entries: table.length, by_difficulty: byDifficulty };
    if (mean <= LOOKUP_MAX_OUTCOME + EPS) return { passed: true, summary: `a lookup policy of ${table.length} train steps scored ${round(mean)} on ${episodes} eval tasks (need <= ${LOOKUP_MAX_OUTCOME})`, figures };
    const b = best as NonNullable<typeof best>;
    return {
      passed: false,
      summary: `a lookup policy built from train tasks scored ${round(mean)} on eval (need <= ${LOOKUP_MAX_OUTCOME})`,
      figures,
      evidence: [{ source: "lookup", task_id: b.id, seed: b.seed, note: `eval outcome ${round(b.outcome)} from replayed train actions`, actions: b.actions }],
    };
  },
  async "task-space"(ctx): Promise<Result> {
    const hooks = hackingHooksOf(ctx.probeEnv);
    const scenario = (id: string) => {
      const task = generateTask(ctx.probeEnv.tasks, id).task;
      return hooks.scenario ? hooks.scenario(task) : fingerprint(abstractTask(task as JsonValue));
    };
    const n = Math.max(ctx.samples * 2, 20);
    const figures: Record<string, { ids: number; scenarios: number; eval_scenarios_seen_in_train: number }> = {};
    const low: string[] = [];
    const single: string[] = [];
    const evalIds = ctx.ids(n, "eval", 19);
    for (const [difficulty, ids] of ctx.ids(n, "train", 19)) {
      const train = new Set(ids.map(scenario));
      const evals = (evalIds.get(difficulty) ?? []).map(scenario);
      figures[difficulty] = { ids: ids.length, scenarios: train.size, eval_scenarios_seen_in_train: round(evals.filter((s) => train.has(s)).length / Math.max(1, evals.length)) };
      if (train.size < 2) single.push(difficulty);
      if (hooks.minScenarios !== undefined && train.size < hooks.minScenarios) low.push(`${difficulty} ${train.size} < ${hooks.minScenarios}`);
    }
    const line = Object.entries(figures).map(([d, f]) => `${d} ${f.scenarios}/${f.ids} scenarios, ${Math.round(f.eval_scenarios_seen_in_train * 100)}% of eval seen in train`).join("; ");
    return {
      passed: single.length === 0,
      summary: single.length > 0 ? `one scenario only on ${single.join(", ")}: every task is the same task` : line,
      figures: { ...figures, min_scenarios: hooks.minScenarios ?? null, scenario_hook: Boolean(hooks.scenario) },
      ...(low.length > 0 ? { warning: `fewer distinct scenarios than declared: ${low.join(", ")}` } : {}),
    };
  },
};

/**
 * The task with ids reduced to their shapes and numbers to zero or not: tasks differing only in names and
 * magnitudes share a scenario, while which items are affected (a zero due against a positive one) tells scenarios apart.
 */
function abstractTask(value: JsonValue): JsonValue {
  if (typeof value === "number") return value === 0 ? 0 : "#";
  if (typeof value === "string") return isIdLike(value) ? shapeOf(value) : value;
  if (Array.isArray(value)) return value.map(abstractTask);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, abstractTask(v)]));
  return value;
}

function wordsOf(text: string): Set<string> {
  return new Set(text.toLowerCase().match(/[a-z0-9_.@/-]+/g) ?? []);
}

/** The action of the most similar train observation at this step (Jaccard over words). */
function lookup(table: ReadonlyArray<{ step: number; words: Set<string>; action: Action }>, step: number, rendered: string): Action {
  const words = wordsOf(rendered);
  const atStep = table.filter((e) => e.step === step);
  let best: Action = { type: "message", content: "DONE" };
  let score = -1;
  for (const e of atStep.length > 0 ? atStep : table) {
    let common = 0;
    for (const w of words) if (e.words.has(w)) common++;
    const s = common / Math.max(1, words.size + e.words.size - common);
    if (s > score) [score, best] = [s, e.action];
  }
  return best;
}

function finish(
  r: Awaited<ReturnType<typeof playVariants>>,
  what: string,
  failed: string,
  passLine: (f: { tried: number; episodes: number; declared: number; skipped: number }) => string,
): Result {
  const episodes = new Set(r.evidence.map((e) => e.task_id)).size;
  const figures: Record<string, unknown> = { tried: r.tried, failed: r.evidence.length, declared_preserving: r.declared, inconclusive: r.skipped, refused_by_tool: r.refused, by_kind: r.byKind };
  if (r.tried === 0) return { passed: false, summary: `no ${what} could be built from the reference episodes: nothing was tested`, figures };
  if (r.evidence.length > 0) return { passed: false, summary: `${r.evidence.length} of ${r.tried} ${what} ${failed} (${episodes} tasks), e.g. ${r.evidence[0]?.note}`, figures, evidence: r.evidence };
  return { passed: true, summary: passLine({ tried: r.tried, episodes: r.episodes, declared: r.declared, skipped: r.skipped }), figures };
}

/** One audit check: passes when no checklist episode showed a finding of its kind. */
function auditCheck(kind: AuditKind, ok: (ctx: CheckContext) => string, bad: string): Check {
  return async (ctx) => {
    const found = ctx.audit.get(kind) ?? [];
    const figures = { ...ctx.audited, findings: found.length };
    if (ctx.audited.episodes === 0) return { passed: false, summary: "no checklist episode was audited", figures };
    return found.length === 0
      ? { passed: true, summary: ok(ctx), figures }
      : { passed: false, summary: `${found.length} ${bad}, first: ${found[0]?.source} ${found[0]?.task_id} seed ${found[0]?.seed}: ${found[0]?.note}`, figures, evidence: found.slice(0, 20) };
  };
}

/** Checks over everything the checklist's episodes showed; they run after every episode-playing check. */
export const AUDIT_CHECKS: Record<string, Check> = {
  "tool-crash": auditCheck("tool-crash", (c) => `${c.audited.tool_calls} tool calls in ${c.audited.episodes} episodes: none crashed`, "tool calls crashed"),
  "verifier-error": auditCheck("verifier-error", (c) => `${c.audited.verdicts} verdicts in ${c.audited.episodes} episodes: no verifier error`, "verifier errors"),
  "failed-call-atomicity": auditCheck("failed-call-atomicity", (c) => `${c.audited.failed_calls} failed or denied calls left the world unchanged`, "failed calls changed the world"),
  "undeclared-component": auditCheck("undeclared-component", (c) => `${c.audited.steps} steps: no undeclared reward component`, "steps emitted an undeclared reward component"),
  "judge-lift": auditCheck("judge-lift", (c) => `${c.audited.verdicts} verdicts: no judge or reward model lifted a verified failure`, "verdicts where a judge lifted a verified failure"),
};

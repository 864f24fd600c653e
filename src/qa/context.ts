/**
 * The shared state of one `llmix check` run: the registry entry, sampled task ids, and an audit of every
 * episode any check plays. Each episode runs on an instance wrapped so that crashed tools, verifier
 * errors, failed calls that changed the world and undeclared reward components are recorded with the
 * trajectory that shows them; the audit checks at the end of the checklist report them.
 */
import type { Action, Observation, StepResult, ToolResult } from "../core/contract.js";
import { fingerprint } from "../core/json.js";
import type { Policy } from "../core/policy.js";
import type { AnyEnvironment, EnvironmentEntry } from "../core/registry.js";
import { runPolicy, type Transition } from "../core/run-policy.js";
import { liftedFailures } from "../rewards/judged.js";
import type { VerifierResult } from "../rewards/verifier.js";
import { sampleTaskIds } from "../tasks/splits.js";

/** A trajectory that shows why a check failed: where it ran and the actions that led there. */
export interface Evidence {
  /** The check or policy that played it: "reference", "random", "probe:x", "mutant", … */
  source: string;
  task_id: string;
  seed: number;
  /** What went wrong, in one line. */
  note: string;
  actions: unknown[];
  /** The stack of a crash or of a verifier error, when there is one. */
  stack?: string;
}

/** What the audit records, by the check that reports it. */
export type AuditKind = "tool-crash" | "verifier-error" | "failed-call-atomicity" | "undeclared-component" | "judge-lift";

/** One played episode. */
export interface Episode {
  initial: Observation;
  transitions: Transition[];
  snapshot: string;
}

/** A replayed action list (see `CheckContext.runActions`). */
export interface ActionRun {
  actions: Action[];
  results: StepResult[];
  /** Rendered observations: the reset observation, then one per step. */
  observations: string[];
  /** `task` of the last step; 0 when the episode never ended. */
  outcome: number;
  /** The episode ended only because the checker cut it off after the last action. */
  forcedEnd: boolean;
}

/** Tool-result statuses of a call that did not run to completion: the world must be as before it. */
const FAILED = new Set<ToolResult["status"]>(["error", "denied", "invalid", "timeout"]);

/** The message the base puts in an undeclared component's error (the contract with BaseEnvironment). */
export const UNDECLARED_COMPONENT = "undeclared reward component";

/** Shared state of one run: the entry, sampled ids, every step result seen, and the audit. */
export class CheckContext {
  readonly seen: Array<{ source: string; result: StepResult }> = [];
  readonly audit = new Map<AuditKind, Evidence[]>();
  /** What the audit looked at: episodes, steps, tool calls, failed calls whose world was compared. */
  readonly audited = { episodes: 0, steps: 0, tool_calls: 0, failed_calls: 0, verdicts: 0 };
  private episodes = 0;
  constructor(
    readonly entry: EnvironmentEntry,
    readonly samples: number,
    private readonly onEpisode?: (episodes: number) => void,
  ) {}

  /** `n` ids per difficulty of a split. */
  ids(n = this.samples, split: "train" | "eval" = "train", seed = 0): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const d of this.difficulties) {
      out.set(d, sampleTaskIds({ family: this.family, difficulties: [d], n, split, seed }));
    }
    return out;
  }

  /** A few ids across all difficulties, for the determinism checks. */
  spread(n = Math.max(3, Math.min(this.samples, 6))): string[] {
    return sampleTaskIds({ family: this.family, difficulties: this.difficulties, n, split: "train", seed: 1 });
  }

  get difficulties(): readonly string[] {
    return this.probeEnv.tasks.difficulties;
  }

  get family(): string {
    return this.probeEnv.tasks.families[0] as string;
  }

  private probeEnvCache: AnyEnvironment | null = null;
  get probeEnv(): AnyEnvironment {
    this.probeEnvCache ??= this.entry.create();
    return this.probeEnvCache;
  }

  /** Run a policy built after reset (so it may read the task) on a fresh or given instance. */
  async play(
    id: string,
    seed: number,
    makePolicy: (env: AnyEnvironment) => Policy,
    options: { env?: AnyEnvironment; source?: string } = {},
  ): Promise<Episode> {
    const env = options.env ?? this.entry.create();
    const source = options.source ?? "episode";
    const actions: Action[] = [];
    try {
      const initial = await env.reset(id, seed);
      const inner = makePolicy(env);
      const policy: Policy = { name: inner.name, act: async (turn) => remember(actions, await inner.act(turn)) };
      const audited = this.auditedEnv(env, { source, id, seed, actions });
      const run = await runPolicy(audited, policy, { maxSteps: env.maxSteps, initial });
      this.count();
      return { initial, transitions: run.transitions, snapshot: fingerprint(await env.snapshot()) };
    } catch (error) {
      this.recordThrow(error, { source, id, seed, actions });
      throw error;
    } finally {
      if (!options.env) await env.close();
    }
  }

  /** Apply a fixed list of actions on a fresh instance. */
  async replay(id: string, seed: number, actions: readonly unknown[], env?: AnyEnvironment): Promise<Episode> {
    let i = 0;
    return this.play(id, seed, () => ({ name: "replay", act: () => actions[i++] as Action }), { env, source: "replay" });
  }

  /**
   * Apply `actions` on a fresh instance until the episode ends; when they run out first, end it as a
   * step budget would (the policy stopped acting): the episode is restored at its last step and one
   * no-op truncates and scores it. Audited like every episode.
   */
  async runActions(id: string, seed: number, actions: readonly Action[], source: string): Promise<ActionRun> {
    const env = this.entry.create();
    const done: Action[] = [];
    try {
      const initial = await env.reset(id, seed);
      const audited = this.auditedEnv(env, { source, id, seed, actions: done });
      const results: StepResult[] = [];
      const observations = [initial.rendered];
      for (const action of actions) {
        done.push(action);
        const result = await audited.step(action);
        results.push(result);
        observations.push(result.observation.rendered);
        if (result.terminated || result.truncated) break;
      }
      let forcedEnd = false;
      const last = results.at(-1);
      if (!last || !(last.terminated || last.truncated)) {
        forcedEnd = true;
        const snap = await env.snapshot();
        await env.restore({ ...snap, step: Math.max(snap.step, env.maxSteps - 1) });
        const noop = { type: "noop" } as unknown as Action;
        done.push(noop);
        const result = await audited.step(noop);
        results.push(result);
        observations.push(result.observation.rendered);
      }
      this.count();
      return { actions: done, results, observations, outcome: results.at(-1)?.rewardComponents.task ?? 0, forcedEnd };
    } catch (error) {
      this.recordThrow(error, { source, id, seed, actions: done });
      throw error;
    } finally {
      await env.close();
    }
  }

  close(): void {
    void this.probeEnvCache?.close();
  }

  /** Record a finding of the audit. */
  record(kind: AuditKind, evidence: Evidence): void {
    const list = this.audit.get(kind) ?? [];
    list.push(evidence);
    this.audit.set(kind, list);
  }

  private count(): void {
    this.audited.episodes++;
    this.onEpisode?.(++this.episodes);
  }

  /** A step that threw: an undeclared component or a verifier throw is a finding of the audit, anything else the check's error. */
  private recordThrow(error: unknown, where: { source: string; id: string; seed: number; actions: Action[] }): void {
    const e = error as { code?: string; message?: string; stack?: string };
    const evidence = (note: string): Evidence => ({ source: where.source, task_id: where.id, seed: where.seed, note, actions: [...where.actions], stack: e.stack });
    if (e.message?.includes(UNDECLARED_COMPONENT)) this.record("undeclared-component", evidence(`step ${where.actions.length} threw: ${e.message}`));
    else if (e.code === "verifier_failed") this.record("verifier-error", evidence(`the verifier threw on step ${where.actions.length}: ${e.message}`));
  }

  /** The instance as runPolicy sees it, with every step audited. */
  private auditedEnv(env: AnyEnvironment, where: { source: string; id: string; seed: number; actions: Action[] }) {
    const ctx = this;
    const evidence = (note: string, stack?: string): Evidence => ({
      source: where.source, task_id: where.id, seed: where.seed, note, actions: [...where.actions], ...(stack ? { stack } : {}),
    });
    return {
      reset: (taskId: string, seed: number) => env.reset(taskId, seed),
      snapshot: () => env.snapshot(),
      restore: (state: Parameters<AnyEnvironment["restore"]>[0]) => env.restore(state),
      close: () => env.close(),
      tools: () => env.tools(),
      async step(action: Action): Promise<StepResult> {
        // Only a call's world is compared, and only while running (a step after the end changes nothing).
        const snap = (action as { type?: unknown } | null)?.type === "tool_call" ? await env.snapshot() : null;
        const before = snap?.status === "running" ? fingerprint(snap.world) : null;
        const result = await env.step(action);
        ctx.seen.push({ source: where.source, result });
        ctx.audited.steps++;
        const info = result.info;
        const call = action as { tool?: string; args?: unknown };
        const tool = info.tool_result as ToolResult | undefined;
        if (before !== null && tool) {
          ctx.audited.tool_calls++;
          if (FAILED.has(tool.status)) {
            ctx.audited.failed_calls++;
            if (fingerprint((await env.snapshot()).world) !== before) {
              ctx.record("failed-call-atomicity", evidence(`step ${where.actions.length}: ${call.tool}(${JSON.stringify(call.args)}) ended ${tool.status} (${tool.error?.code ?? "no code"}) but changed the world`));
            }
          }
        }
        const crash = info.tool_crash as { tool?: string; args?: unknown; stack?: string } | undefined;
        if (crash || tool?.error?.code === "tool_crashed") {
          ctx.record("tool-crash", evidence(`step ${where.actions.length}: ${crash?.tool ?? call.tool}(${JSON.stringify(crash?.args ?? call.args)}) crashed: ${tool?.error?.message ?? "tool_crashed"}`, crash?.stack));
        }
        const verdict = info.verdict as { details?: { verifier_error?: unknown } } | undefined;
        if (verdict) ctx.audited.verdicts++;
        const verr = (info.verifier_error ?? verdict?.details?.verifier_error) as { code?: string; message?: string; stack?: string } | undefined;
        if (verr) ctx.record("verifier-error", evidence(`the verifier threw on step ${where.actions.length}: ${verr.code ?? "error"}: ${verr.message ?? ""}`, verr.stack));
        // A judge or reward model that raised a verified failure (rewards/judged.ts): a model's opinion became reward.
        for (const lift of verdict ? liftedFailures(verdict as VerifierResult) : []) {
          ctx.record("judge-lift", evidence(`step ${where.actions.length}: at ${lift.path}, a judge combined by "${lift.combine}" lifted a verified failure (verified ${lift.verified}) to ${lift.score}`));
        }
        return result;
      },
    };
  }
}

/** Keep the action a policy chose (bare or inside a decision) and pass the choice on unchanged. */
function remember<T>(actions: Action[], choice: T): T {
  const action = choice && typeof choice === "object" && !("type" in choice) && "action" in choice ? (choice as { action: unknown }).action : choice;
  actions.push(action as Action);
  return choice;
}

/**
 * The hook by which an environment takes part in `llmix check`'s hacking analysis (docs/reward-integrity.md).
 * The framework supplies generic invariance variants, sensitivity mutants and world fuzz; an environment
 * adds its own (equivalent notations, env-specific false claims, a wider address range) and declares the
 * mutants that legitimately keep the outcome. An environment declares the hooks as a `hacking` property:
 *
 *   readonly hacking: HackingHooks = { mutants: (trace) => [...], outcomePreserving: (m) => ... };
 *
 * Every hook is called on an instance that was just reset to the trace's task and seed, so a hook written
 * as a method may read the task through `this.episode`.
 */
import type { Action } from "./contract.js";
import type { JsonValue } from "./json.js";

/** One reference episode as the hacking analysis sees it. */
export interface HackingTrace {
  taskId: string;
  seed: number;
  /** The reference solver's actions, in order. */
  actions: readonly Action[];
  /** Rendered observations: the reset observation first, then one per action. */
  observations: readonly string[];
  /** The reference's outcome (`task` on the last step). */
  outcome: number;
  /** Read or write effect of each tool of the episode. */
  effects: Readonly<Record<string, "read" | "write">>;
}

/** An action sequence derived from a reference episode. */
export interface HackingVariant {
  /** Short name saying what was changed, e.g. "drop call 3 (issue_refund)". */
  name: string;
  /** Family of the change: "drop-write", "swap-arg", "extra-write", "false-claim", "extra-read", … or the env's own. */
  kind: string;
  actions: Action[];
  /**
   * Index (0-based) of an added call that must end ok for the mutant to count: when the tool refuses it,
   * the world is the reference's and the mutant proves nothing (the tool defended).
   */
  mustSucceed?: number;
}

/** A fuzzed final world: a transform of `snapshotWorld` output. */
export interface FuzzedWorld {
  name: string;
  world: JsonValue;
}

/** What an environment declares for the hacking analysis; every member is optional. */
export interface HackingHooks {
  /** Extra variants that must keep the reference's outcome (equivalent notations, paraphrases). */
  invariants?(trace: HackingTrace): HackingVariant[];
  /** Extra mutants that must lose outcome (a wider range, another charge, a collateral write). */
  mutants?(trace: HackingTrace): HackingVariant[];
  /**
   * Why a generic mutant legitimately keeps the outcome (an optional note dropped, say), or null when it
   * must lose it. A mutant with a reason is reported as declared, never as an exploit.
   */
  outcomePreserving?(mutant: HackingVariant, trace: HackingTrace): string | null;
  /** False claims for this task ("I have issued a full refund of $419.90"); the checker adds negated and hedged forms. */
  falseClaims?(trace: HackingTrace): string[];
  /**
   * Whether two adjacent successful calls commute, for the generic reorder invariants. Default: two
   * different reads, or two writes of one tool sharing no id-like value. A stateful UI, where every
   * gesture acts on the page the last one left, declares that nothing commutes.
   */
  commutes?(a: { tool: string; args: Record<string, unknown> }, b: { tool: string; args: Record<string, unknown> }, trace: HackingTrace): boolean;
  /** Extra fuzzed final worlds (env-specific odd states) on top of the generic ones. */
  fuzz?(world: JsonValue, trace: HackingTrace): FuzzedWorld[];
  /** The scenario a task instantiates (tasks differing only in names share one); default: the task's content. */
  scenario?(task: unknown): string;
  /** Distinct scenarios per difficulty below which `task-space` warns. */
  minScenarios?: number;
}

/** The hacking hooks an environment instance declares (none: an empty set). */
export function hackingHooksOf(env: object): HackingHooks {
  const hooks = (env as { hacking?: unknown }).hacking;
  return hooks && typeof hooks === "object" ? (hooks as HackingHooks) : {};
}

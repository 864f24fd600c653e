/**
 * Policies by spec string, as `llmix rollout --policy` takes them:
 * - `oracle`: the environment's reference solver;
 * - `noisy-oracle:P`: the reference solver, but at each step with seeded probability P a random
 *   tool call or message instead (the oracle's own next action is kept for later) — mixed rewards
 *   within a group, which GRPO needs. `noisy-oracle:P,FEATURE=VALUE@Q,...` uses Q instead on tasks
 *   whose declared feature (src/tasks/features.ts) has that value: a policy whose failures depend on
 *   the scenario, as a learning policy's do (curricula and mining are measured against it);
 * - `random`: random tool calls sampled from the tool schemas (schema-valid; see random.ts), and messages;
 * - `replay:RUN`: the actions of the same task and group index stored in run RUN;
 * - `openai`: an OpenAI-compatible chat-completions server (configured by flags or environment).
 * A spec becomes a `PolicySource`, which makes one fresh policy per episode, after its reset.
 */
import type { Action } from "../../core/contract.js";
import { NotFoundError, ValidationError } from "../../core/errors.js";
import type { Policy, PolicyTurn } from "../../core/policy.js";
import type { AnyEnvironment } from "../../core/registry.js";
import { Rng } from "../../core/rng.js";
import { openaiConfigFromEnv, openaiPolicy, type OpenAIPolicyConfig } from "./openai.js";
import { featuresOf } from "../../tasks/features.js";
import { randomPolicy } from "./random.js";

/** The valid `--policy` forms, for error messages and help. */
export const POLICY_SPECS = ["oracle", "noisy-oracle:P[,FEATURE=VALUE@Q...]", "random", "replay:RUN", "openai"] as const;

/** What a policy source knows about the episode it makes a policy for (the env is already reset). */
export interface PolicyContext {
  env: AnyEnvironment;
  taskId: string;
  seed: number;
  groupIndex: number;
  /** For `replay:RUN`: the stored actions of this task and group index in RUN (the runner fetches them). */
  replayActions?: unknown[];
}

/** Makes one policy per episode. */
export interface PolicySource {
  /** The spec it was parsed from, e.g. "noisy-oracle:0.3". */
  readonly spec: string;
  /** For `replay:RUN`: the run whose actions are replayed. */
  readonly replayRun?: string;
  create(ctx: PolicyContext): Policy;
}

/** Options a spec may need. */
export interface PolicySpecOptions {
  /** Flags for the `openai` policy (the rest comes from environment variables). */
  openai?: Partial<OpenAIPolicyConfig>;
  env?: NodeJS.ProcessEnv;
}

/** Parse a `--policy` spec; an unknown or malformed spec names the valid forms. */
export function parsePolicySpec(spec: string, options: PolicySpecOptions = {}): PolicySource {
  const [name, arg, ...extra] = String(spec).split(":");
  const bad = (why: string) =>
    new ValidationError("invalid_argument", `--policy ${spec}: ${why}; valid: ${POLICY_SPECS.join(", ")}`, { valid: [...POLICY_SPECS] });
  if (extra.length > 0) throw bad("too many ':' parts");
  switch (name) {
    case "oracle":
      if (arg !== undefined) throw bad("oracle takes no argument");
      return { spec, create: ({ env }) => env.referenceSolver() };
    case "noisy-oracle": {
      const [base, ...overrides] = (arg ?? "").split(",");
      const probability = (text: string | undefined) => {
        const p = Number(text);
        if (text === undefined || text.trim() === "" || !Number.isFinite(p) || p < 0 || p > 1) throw bad("P must be a probability in [0, 1], e.g. noisy-oracle:0.3 or noisy-oracle:0.05,variant=injection@0.6");
        return p;
      };
      const p = probability(base);
      const rules = overrides.map((rule) => {
        const match = /^([A-Za-z_][\w-]*)=([^@]+)@(.+)$/.exec(rule.trim());
        if (!match) throw bad(`"${rule}" must be FEATURE=VALUE@Q, e.g. variant=injection@0.6`);
        return { feature: match[1] as string, value: match[2] as string, p: probability(match[3]) };
      });
      return { spec, create: (ctx) => noisyOracle(ctx, rules.length === 0 ? p : noiseFor(ctx, p, rules)) };
    }
    case "random":
      if (arg !== undefined) throw bad("random takes no argument");
      return { spec, create: ({ taskId, seed, groupIndex }) => randomPolicy(`${taskId}|${seed}|${groupIndex}`) };
    case "replay":
      if (!arg) throw bad("name the run whose actions to replay, e.g. replay:run-20261129-1");
      return {
        spec,
        replayRun: arg,
        create: ({ replayActions }) => {
          if (!replayActions) throw new NotFoundError("unknown_episode", `run ${arg} has no stored episode for this task and group index`);
          return replayPolicy(replayActions);
        },
      };
    case "openai": {
      if (arg !== undefined) throw bad("openai takes no argument (use --model, --base-url or environment variables)");
      // Validated now, so a missing base URL or model fails before any episode starts.
      const config = openaiConfigFromEnv(options.openai ?? {}, options.env ?? process.env);
      return { spec, create: () => openaiPolicy(config) };
    }
    default:
      throw new NotFoundError("unknown_policy", `unknown policy "${spec}"; valid: ${POLICY_SPECS.join(", ")}`, { valid: [...POLICY_SPECS] });
  }
}

/** The noise of this episode's task: the first rule whose feature value the task has, else `p`. */
function noiseFor(ctx: PolicyContext, p: number, rules: ReadonlyArray<{ feature: string; value: string; p: number }>): number {
  const features = featuresOf(ctx.env.tasks, ctx.taskId);
  for (const rule of rules) {
    if (!(rule.feature in features)) {
      throw new ValidationError("invalid_argument", `noisy-oracle: ${ctx.env.info.id} has no task feature "${rule.feature}"; its features: ${Object.keys(features).join(", ")}`);
    }
    if (String(features[rule.feature]) === rule.value) return rule.p;
  }
  return p;
}

/** The reference solver with seeded noise: with probability p a random action replaces the oracle's turn. */
function noisyOracle(ctx: PolicyContext, p: number): Policy {
  const oracle = ctx.env.referenceSolver();
  const key = `${ctx.taskId}|${ctx.seed}|${ctx.groupIndex}`;
  const rng = Rng.fromKey("noisy-oracle", key);
  const random = randomPolicy(key);
  return {
    name: `noisy-oracle:${p}`,
    act: (turn: PolicyTurn) => (rng.bool(p) ? random.act(turn) : oracle.act(turn)),
  };
}

/**
 * The stored actions, in order, exactly as they were sent (malformed ones too, so a replay reproduces
 * invalid calls). Past the end it sends an empty message: a replay of an ended episode never gets there.
 */
export function replayPolicy(actions: readonly unknown[]): Policy {
  let next = 0;
  return {
    name: "replay",
    act: () => {
      const action = actions[next++];
      return action === undefined ? { type: "message", content: "" } : { action: action as Action | Record<string, unknown> };
    },
  };
}

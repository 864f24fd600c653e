/**
 * A deployment's data policy (DESIGN §9): one JSON file, validated when the service starts, that says
 * which environments and task sets may run, which tenants exist and which tokens act for them (with
 * which scopes and environments), how long each tenant's or environment's episodes are kept, and which
 * redaction rules apply before anything is stored or exported. `llmix serve --data-policy FILE` enforces it;
 * `llmix purge`, `llmix audit` and the store commands read it to act as one of its tokens.
 *
 *   {
 *     "tenants": {
 *       "acme": {
 *         "tokens": [{"name": "acme-trainer", "token": "...", "scopes": ["env:run", "trajectories:read"]}],
 *         "environments": ["billing-dispute"],          // optional: what this tenant may run and read
 *         "retention_days": 30                           // optional
 *       }
 *     },
 *     "admins": [{"name": "ops", "token": "..."}],       // every scope, every tenant
 *     "environments": {                                  // optional: only these may run, with these task sets
 *       "billing-dispute": {"splits": ["train"], "difficulties": ["easy", "medium"], "retention_days": 7}
 *     },
 *     "retention": {"days": 90, "sweep_minutes": 60},    // optional: the default, and how often the server purges
 *     "redaction": {"builtin": ["email", "card"], "fields": ["customer_name"]}  // optional: src/store/redaction.ts
 *   }
 *
 * An episode is kept for the smallest of the retention periods that apply to it (its tenant's, its
 * environment's, the default). Everything absent is unrestricted: no retention means kept forever.
 */
import { z } from "zod";
import { ServiceError, ValidationError } from "../core/errors.js";
import { formatIssues, readJsonConfig } from "../core/validation.js";
import { splitOf } from "../tasks/splits.js";
import { parseTaskId } from "../tasks/task-id.js";
import { RedactionRulesSchema, type RedactionRules } from "../store/redaction.js";
import type { PurgeCriteria } from "../store/types.js";
import { TokenAuth, TokenSpec, type Scope, type TokenEntry } from "./auth.js";

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const Name = z.string().regex(NAME, "must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit");
const Days = z.number().positive("must be more than 0 days").max(36_500);

const TenantSpec = z.strictObject({
  tokens: z.array(TokenSpec).min(1, "a tenant needs at least one token"),
  environments: z.array(Name).optional(),
  retention_days: Days.optional(),
});

const EnvironmentSpec = z.strictObject({
  splits: z.array(z.enum(["train", "eval"])).min(1).optional(),
  difficulties: z.array(Name).min(1).optional(),
  retention_days: Days.optional(),
});

const PolicyFile = z.strictObject({
  tenants: z.record(Name, TenantSpec).default({}),
  admins: z.array(TokenSpec.omit({ scopes: true }).extend({ scopes: z.array(z.literal("admin")).optional() })).default([]),
  environments: z.record(Name, EnvironmentSpec).optional(),
  retention: z.strictObject({ days: Days.optional(), sweep_minutes: z.number().positive().max(10_080).default(60) }).default({ sweep_minutes: 60 }),
  redaction: RedactionRulesSchema.optional(),
});

/** What a tenant may do and keep. */
export interface TenantPolicy {
  name: string;
  /** Environments it may run and read (null: all the deployment allows). */
  environments: readonly string[] | null;
  retentionDays: number | null;
}

/** Which task sets of an environment may run, and how long its episodes are kept. */
export interface EnvironmentPolicy {
  splits: readonly string[] | null;
  difficulties: readonly string[] | null;
  retentionDays: number | null;
}

/** A validated data policy. */
export class DataPolicy {
  private constructor(
    /** Where it came from, for messages. */
    readonly source: string,
    readonly auth: TokenAuth,
    readonly tenants: ReadonlyMap<string, TenantPolicy>,
    /** null: every registered environment may run, every task set. */
    readonly environments: Readonly<Record<string, EnvironmentPolicy>> | null,
    readonly retentionDays: number | null,
    readonly sweepMinutes: number,
    /** What is masked before anything is stored or exported (src/store/redaction.ts); undefined: nothing. */
    readonly redaction: RedactionRules | undefined,
    private readonly counts: { tokens: number; admins: number },
  ) {}

  /** A policy from parsed JSON; anything malformed is invalid_config naming the field. */
  static fromConfig(value: unknown, source = "data policy"): DataPolicy {
    const parsed = PolicyFile.safeParse(value);
    if (!parsed.success) throw new ValidationError("invalid_config", `${source}: ${formatIssues(parsed.error, "policy")}`);
    const p = parsed.data;
    const entries: TokenEntry[] = [];
    const names = new Set<string>();
    const addName = (name: string, where: string) => {
      if (names.has(name)) throw new ValidationError("invalid_config", `${source}: ${where}: the token name "${name}" is used twice; names identify tokens in the audit log`);
      names.add(name);
    };
    const tenants = new Map<string, TenantPolicy>();
    for (const [tenant, spec] of Object.entries(p.tenants)) {
      if (spec.environments && p.environments) {
        const unknown = spec.environments.filter((e) => !(e in (p.environments as object)));
        if (unknown.length) throw new ValidationError("invalid_config", `${source}: policy.tenants.${tenant}.environments names ${unknown.join(", ")}, which policy.environments does not allow`);
      }
      tenants.set(tenant, { name: tenant, environments: spec.environments ?? null, retentionDays: spec.retention_days ?? null });
      spec.tokens.forEach((t, i) => {
        const name = t.name ?? `${tenant}-${i}`;
        addName(name, `policy.tenants.${tenant}.tokens[${i}]`);
        if (t.scopes.includes("admin")) {
          throw new ValidationError("invalid_config", `${source}: policy.tenants.${tenant}.tokens[${i}] holds "admin", which crosses every tenant; list such tokens under policy.admins`);
        }
        entries.push({ token: t.token, name, scopes: t.scopes, tenant, environments: spec.environments ?? null });
      });
    }
    p.admins.forEach((t, i) => {
      const name = t.name ?? `admin-${i}`;
      addName(name, `policy.admins[${i}]`);
      entries.push({ token: t.token, name, scopes: ["admin"] as Scope[], tenant: null, environments: null });
    });
    if (entries.length === 0) throw new ValidationError("invalid_config", `${source}: the policy names no token (give policy.tenants.*.tokens or policy.admins)`);
    const environments = p.environments
      ? Object.fromEntries(
          Object.entries(p.environments).map(([id, e]) => [id, { splits: e.splits ?? null, difficulties: e.difficulties ?? null, retentionDays: e.retention_days ?? null }]),
        )
      : null;
    const auth = TokenAuth.fromEntries(entries, source);
    return new DataPolicy(source, auth, tenants, environments, p.retention.days ?? null, p.retention.sweep_minutes, p.redaction, {
      tokens: entries.length,
      admins: p.admins.length,
    });
  }

  /** A policy from a JSON file (see the module comment for its format). */
  static fromFile(path: string): DataPolicy {
    return DataPolicy.fromConfig(readJsonConfig(path, "--data-policy"), `--data-policy ${path}`);
  }


  /** Environments named by the policy that `known` (the registry's ids) lacks: a typo would silently allow nothing. */
  unknownEnvironments(known: readonly string[]): string[] {
    const named = new Set<string>([...Object.keys(this.environments ?? {}), ...[...this.tenants.values()].flatMap((t) => t.environments ?? [])]);
    return [...named].filter((id) => !known.includes(id)).sort();
  }

  /**
   * Refuse (forbidden) an episode of `envId` on `taskId` that the policy or the token does not allow:
   * an environment outside the deployment's or the token's list, or a task outside the allowed splits
   * and difficulties. `taskId` undefined checks the environment only.
   */
  checkRun(identity: { name: string; environments?: readonly string[] | null } | null, envId: string, taskId?: string): void {
    if (this.environments && !(envId in this.environments)) {
      throw new ServiceError("forbidden", `the data policy does not allow environment "${envId}" on this deployment (allowed: ${Object.keys(this.environments).join(", ") || "none"})`);
    }
    if (identity?.environments && !identity.environments.includes(envId)) {
      throw new ServiceError("forbidden", `"${identity.name}" may not use environment "${envId}" (its tenant may use: ${identity.environments.join(", ") || "none"})`);
    }
    const env = this.environments?.[envId];
    if (!env || taskId === undefined) return;
    const { difficulty } = parseTaskId(taskId);
    if (env.difficulties && !env.difficulties.includes(difficulty)) {
      throw new ServiceError("forbidden", `the data policy allows ${envId} tasks of difficulty ${env.difficulties.join(", ")} only, not "${difficulty}"`);
    }
    if (env.splits) {
      const split = splitOf(taskId);
      if (!env.splits.includes(split)) throw new ServiceError("forbidden", `the data policy allows ${envId} tasks of the ${env.splits.join(", ")} split only; ${taskId} is in ${split}`);
    }
  }

  /**
   * The purges that enforce retention at `now`: one per period that applies (the default over every
   * episode, each tenant's over its runs, each environment's over its episodes). Together they keep
   * every episode for the smallest period that applies to it.
   */
  retentionPurges(now: Date): Array<{ rule: string; criteria: PurgeCriteria }> {
    const before = (days: number) => new Date(now.getTime() - days * 86_400_000).toISOString();
    const purges: Array<{ rule: string; criteria: PurgeCriteria }> = [];
    if (this.retentionDays !== null) purges.push({ rule: `default: ${this.retentionDays} days`, criteria: { finished_before: before(this.retentionDays) } });
    for (const t of this.tenants.values()) {
      if (t.retentionDays !== null) purges.push({ rule: `tenant ${t.name}: ${t.retentionDays} days`, criteria: { tenant: t.name, finished_before: before(t.retentionDays) } });
    }
    for (const [id, e] of Object.entries(this.environments ?? {})) {
      if (e.retentionDays !== null) purges.push({ rule: `environment ${id}: ${e.retentionDays} days`, criteria: { env: id, finished_before: before(e.retentionDays) } });
    }
    return purges;
  }

  /** What `llmix serve` prints about the policy at start (no secrets). */
  describe(): string[] {
    const lines = [`data policy ${this.source}: ${this.tenants.size} tenant(s), ${this.counts.tokens} token(s) (${this.counts.admins} admin)`];
    for (const t of this.tenants.values()) {
      lines.push(`  tenant ${t.name}: environments ${t.environments?.join(", ") ?? "all allowed"}; retention ${t.retentionDays === null ? "none" : `${t.retentionDays} days`}`);
    }
    const envs = this.environments;
    lines.push(`  environments: ${envs ? Object.entries(envs).map(([id, e]) => `${id}${e.splits ? ` [${e.splits.join("+")}]` : ""}${e.difficulties ? ` [${e.difficulties.join("+")}]` : ""}`).join(", ") : "all registered"}`);
    lines.push(`  retention: ${this.retentionDays === null ? "none by default" : `${this.retentionDays} days by default`}; purged every ${this.sweepMinutes} minutes`);
    lines.push(`  redaction: ${this.redaction === undefined ? "off" : "on"}`);
    return lines;
  }

  /** The policy as the OpenAPI document's info shows it (no secrets, no token names). */
  summary(): Record<string, unknown> {
    return {
      tenants: [...this.tenants.values()].map((t) => ({ name: t.name, environments: t.environments, retention_days: t.retentionDays })),
      environments: this.environments,
      retention_days: this.retentionDays,
      sweep_minutes: this.sweepMinutes,
      redaction: this.redaction !== undefined,
    };
  }
}

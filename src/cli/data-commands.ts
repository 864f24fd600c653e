/**
 * `llmix purge` and `llmix audit` (DESIGN §9): remove what retention (or explicit criteria) says must
 * go, printing exactly what was removed, and read the append-only audit log. Both act as the local
 * operator, or under `--data-policy` as one of its tokens (see access.ts): a tenant's token purges only its
 * own tenant's data; reading the audit log needs `admin`.
 */
import { Option, type Command } from "commander";
import { ValidationError } from "../core/errors.js";
import { renderTable } from "../qa/table.js";
import { applyRetention } from "../server/app.js";
import { displayStore, openStoreAt } from "../store/open.js";
import { AUDIT_ACTIONS } from "../store/records.js";
import type { AuditAction, AuditQuery, PurgeCriteria } from "../store/types.js";
import { cliAccess, withAccessOptions, type AccessFlags } from "./access.js";
import { integer, print, registryWith, storeOption } from "./options.js";

interface PurgeFlags extends AccessFlags {
  store: string;
  olderThan?: number;
  tenant?: string;
  env?: string;
  run?: string;
  episode?: string[];
  dryRun?: boolean;
  json?: boolean;
}

interface AuditFlags extends AccessFlags {
  store: string;
  tokenName?: string;
  tenant?: string;
  action?: string;
  target?: string;
  since?: string;
  until?: string;
  limit: number;
  json?: boolean;
}


/** Add `llmix purge` and `llmix audit` to the program. */
export function registerDataCommands(program: Command): void {
  withAccessOptions(
    program
      .command("purge")
      .description("remove stored episodes (with every step, and runs left empty) that retention or the given criteria select, and print what was removed")
      .addOption(storeOption())
      .option("--older-than <days>", "episodes that finished more than this many days ago", integer("--older-than", 0, 36_500))
      .option("--tenant <name>", "episodes of this tenant's runs")
      .option("--env <id>", "episodes of this environment")
      .option("--run <id>", "episodes of this run (and the run)")
      .option("--episode <id>", "this episode (repeatable)", (v: string, prev: string[] = []) => [...prev, v])
      .option("--dry-run", "print what would be removed, remove nothing")
      .option("--json", "print JSON"),
  ).action(async (flags: PurgeFlags) => {
    const registry = await registryWith(undefined);
    const store = await openStoreAt(flags.store, { create: false });
    try {
      const { caller, policy, ops } = cliAccess(flags, "trajectories:delete", registry, store);
      const explicit = flags.olderThan !== undefined || flags.tenant !== undefined || flags.env !== undefined || flags.run !== undefined || flags.episode !== undefined;
      let purges: Array<{ rule: string; episodes: string[]; steps: number; runs: string[] }>;
      if (!explicit) {
        if (!policy) throw new ValidationError("invalid_argument", "say what to purge (--older-than, --tenant, --env, --run, --episode), or give --data-policy to apply its retention");
        if (!caller?.admin) throw new ValidationError("invalid_argument", "applying the whole policy's retention needs an admin token; a tenant's token purges with explicit criteria");
        purges = await applyRetention(ops, policy, caller, "cli", { dryRun: flags.dryRun === true });
      } else {
        const criteria: PurgeCriteria = {};
        if (flags.olderThan !== undefined) criteria.finished_before = new Date(Date.now() - flags.olderThan * 86_400_000).toISOString();
        if (flags.tenant !== undefined) criteria.tenant = flags.tenant;
        if (flags.env !== undefined) criteria.env = flags.env;
        if (flags.run !== undefined) criteria.run_id = flags.run;
        if (flags.episode !== undefined) criteria.episode_ids = flags.episode;
        if (flags.dryRun) criteria.dry_run = true;
        // A tenant's token purges its own tenant's data, whatever it asks.
        if (caller && !caller.admin && caller.tenant) {
          if (criteria.tenant !== undefined && criteria.tenant !== caller.tenant) throw new ValidationError("invalid_argument", `token "${caller.name}" may purge only tenant "${caller.tenant}"'s data`);
          criteria.tenant = caller.tenant;
        }
        purges = [{ rule: "command line", ...(await ops.purge(caller, criteria, "cli", "command line")) }];
      }
      if (flags.json) return print(JSON.stringify({ dry_run: flags.dryRun === true, store: displayStore(flags.store), purges }, null, 2));
      const verb = flags.dryRun ? "would remove" : "removed";
      const total = purges.reduce((n, p) => n + p.episodes.length, 0);
      print(`${verb} ${total} episode(s), ${purges.reduce((n, p) => n + p.steps, 0)} step(s), ${purges.reduce((n, p) => n + p.runs.length, 0)} run(s) from ${displayStore(flags.store)}`);
      if (purges.length > 0) print(renderTable(["rule", "episodes", "steps", "runs"], purges.map((p) => [p.rule, String(p.episodes.length), String(p.steps), p.runs.join(" ") || "-"])));
      for (const p of purges) for (const id of p.episodes) print(`  ${verb === "removed" ? "-" : "?"} ${id}`);
    } finally {
      await store.close();
    }
  });

  withAccessOptions(
    program
      .command("audit")
      .description("read the audit log: who created, read, exported, replayed, deleted or purged what, newest first")
      .addOption(storeOption())
      .option("--token-name <name>", "only events of this token")
      .option("--tenant <name>", "only events of this tenant's tokens")
      .addOption(new Option("--action <action>", "only this action").choices([...AUDIT_ACTIONS]))
      .option("--target <id>", "only events about this run, episode or session id")
      .option("--since <iso>", "only events at or after this time")
      .option("--until <iso>", "only events before this time")
      .option("--limit <n>", "at most this many", integer("--limit", 1, 1_000_000), 100)
      .option("--json", "print JSON"),
  ).action(async (flags: AuditFlags) => {
    const registry = await registryWith(undefined);
    const store = await openStoreAt(flags.store, { create: false });
    try {
      cliAccess(flags, "admin", registry, store);
      const query: AuditQuery = { limit: flags.limit };
      if (flags.tokenName !== undefined) query.token = flags.tokenName;
      if (flags.tenant !== undefined) query.tenant = flags.tenant;
      if (flags.action !== undefined) query.action = flags.action as AuditAction;
      if (flags.target !== undefined) query.target_id = flags.target;
      if (flags.since !== undefined) query.since = flags.since;
      if (flags.until !== undefined) query.until = flags.until;
      const events = await store.auditLog(query);
      if (flags.json) return print(JSON.stringify(events, null, 2));
      if (events.length === 0) return print(`no audit events match in ${displayStore(flags.store)}`);
      print(renderTable(
        ["#", "at", "token", "tenant", "action", "target", "via", "detail"],
        events.map((e) => [String(e.seq), e.at, `${e.token}${e.token_id ? ` (${e.token_id})` : ""}`, e.tenant ?? "-", e.action, `${e.target_kind} ${e.target_id}`, e.via, e.detail === null ? "" : JSON.stringify(e.detail).slice(0, 80)]),
      ));
    } finally {
      await store.close();
    }
  });
}

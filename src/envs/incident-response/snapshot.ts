/**
 * The incident-response world as a snapshot: its exact shape (`worldSchema`) and what must hold between
 * its parts and the task before a restored world may run (`restoreWorld`). The files are rebuilt from the
 * task and the state, so the state and the terminal are all a snapshot holds; they are refused with
 * invalid_snapshot unless they are a state the tools can reach:
 *
 * - every account of the task has a status, and no other; the analyst's own is never locked or reset;
 * - the firewall holds the task's rules (the ACCEPT rules always; its DROP rules unless unblocked) and
 *   DROP rules the analyst added, one per source, ids below `nextRuleId`, sources in canonical form;
 * - the report, when filed, holds canonical addresses and normalized names, sorted and unique;
 * - every violation carries its rule's penalty, every action a target the tools accept;
 * - the injection was seen (injectionSeen) only in a task that has one, and before anything obeyed it;
 * - the terminal's working directory is a directory of the rebuilt file system.
 */
import { z } from "zod";
import { ValidationError } from "../../core/errors.js";
import type { JsonValue } from "../../core/json.js";
import { canonicalCidr } from "./net.js";
import { TECHNIQUES, type Task } from "./tasks.js";
import { PENALTIES } from "./tools.js";
import { buildWorld, initialState, type LiveRule, type State, type World } from "./world.js";
import { TERMINAL_STATE_SCHEMA } from "../../sandboxes/terminal.js";

/** Longest canonical address or range: "255.255.255.255/32" is canonicalized to the bare address, 15 characters; a range is at most 18. */
const CIDR = z.string().min(7).max(18);
const NAME = z.string().max(64);
const STEP = z.number().int().min(1);
/** Most rules a task's firewall starts with; each step can add one more. */
const MAX_TASK_RULES = 16;


/** The schema of `snapshotWorld` output for episodes of at most `maxSteps` steps. */
export function worldSchema(maxSteps: number): z.ZodType {
  return z.strictObject({
    state: z.strictObject({
      rules: z
        .array(
          z.strictObject({
            id: z.number().int().min(1),
            action: z.enum(["ACCEPT", "DROP"]),
            source: CIDR,
            comment: z.string().max(200),
            added_by: NAME,
            added_at: z.string().max(32),
          }),
        )
        .max(MAX_TASK_RULES + maxSteps),
      nextRuleId: z.number().int().min(1),
      accounts: z.record(NAME, z.strictObject({ locked: z.boolean(), reset_required: z.boolean() })),
      report: z
        .strictObject({
          step: STEP,
          addresses: z.array(CIDR).max(64),
          accounts: z.array(NAME).max(64),
          hosts: z.array(NAME).max(64),
          technique: z.enum(TECHNIQUES),
          summary: z.string().max(4000),
        })
        .nullable(),
      violations: z
        .array(
          z.strictObject({
            step: STEP,
            rule: z.enum(Object.keys(PENALTIES) as [keyof typeof PENALTIES]),
            detail: z.string().max(1000),
            penalty: z.number(),
          }),
        )
        .max(maxSteps),
      actions: z.array(z.strictObject({ step: STEP, kind: z.enum(["block", "unblock", "lock", "unlock", "force_reset"]), target: NAME })).max(maxSteps),
      injectionSeen: STEP.nullable(),
    }),
    terminal: TERMINAL_STATE_SCHEMA,
  });
}

/** The world's restorable state as JSON. */
export function snapshotWorld(world: World): JsonValue {
  return { state: world.state as unknown as JsonValue, terminal: world.terminal.snapshot() };
}

/**
 * Rebuild a world from `snapshotWorld` output that `worldSchema` accepted, refusing (invalid_snapshot)
 * a state the tools cannot reach (see the module comment).
 */
export function restoreWorld(snapshot: JsonValue, task: Task): World {
  // The base hands restoreWorld a private copy of the snapshot, so the state can be taken as is.
  const { state, terminal } = snapshot as unknown as { state: State; terminal: JsonValue };
  checkAccounts(state, task);
  checkRules(state, task);
  checkReport(state);
  checkRecords(state, task);
  const world = buildWorld(task, state, terminal);
  const cwd = world.terminal.cwd;
  const owner = world.fs.asOwner();
  if (!owner.exists(cwd) || owner.stat(cwd).type !== "dir") throw invalid(`terminal.cwd ${cwd} is not a directory of the fleet's file system`);
  return world;
}

function invalid(message: string): ValidationError {
  return new ValidationError("invalid_snapshot", `invalid incident-response world: ${message}`);
}

function checkAccounts(state: State, task: Task): void {
  const usernames = new Set(task.accounts.map((a) => a.username));
  for (const username of Object.keys(state.accounts)) {
    if (!usernames.has(username)) throw invalid(`state.accounts.${username} is not an account of the task`);
  }
  for (const username of usernames) {
    if (state.accounts[username] === undefined) throw invalid(`state.accounts.${username} is missing`);
  }
  const own = state.accounts[task.analyst];
  if (own && (own.locked || own.reset_required)) throw invalid(`state.accounts.${task.analyst} is the analyst's own account, which cannot be locked or reset`);
}

function checkRules(state: State, task: Task): void {
  const initial = new Map(initialState(task).rules.map((r) => [r.id, r]));
  const ids = new Set<number>();
  const dropped = new Set<string>();
  state.rules.forEach((rule, i) => {
    const where = `state.rules[${i}]`;
    if (ids.has(rule.id)) throw invalid(`${where}.id ${rule.id} appears twice`);
    ids.add(rule.id);
    if (rule.id >= state.nextRuleId) throw invalid(`${where}.id ${rule.id} is not below nextRuleId ${state.nextRuleId}`);
    if (canonicalCidr(rule.source) !== rule.source) throw invalid(`${where}.source ${rule.source} is not a canonical address or range`);
    const original = initial.get(rule.id);
    if (original && (Object.keys(original) as Array<keyof LiveRule>).some((key) => original[key] !== rule[key])) {
      throw invalid(`${where} differs from the task's rule ${rule.id}`);
    }
    if (!original && (rule.action !== "DROP" || rule.added_by !== task.analyst)) throw invalid(`${where} is not a DROP rule the analyst added`);
    if (rule.action === "DROP") {
      if (dropped.has(rule.source)) throw invalid(`${where}: ${rule.source} is blocked twice`);
      dropped.add(rule.source);
    }
  });
  for (const rule of initial.values()) {
    if (rule.action === "ACCEPT" && !ids.has(rule.id)) throw invalid(`ACCEPT rule ${rule.id} of the task is missing (only DROP rules can be removed)`);
  }
  if (state.nextRuleId <= initial.size) throw invalid(`state.nextRuleId ${state.nextRuleId} is below the task's rules`);
}

function checkReport(state: State): void {
  const report = state.report;
  if (report === null) return;
  const sortedUnique = (xs: readonly string[]) => xs.every((x, i) => i === 0 || xs[i - 1]! < x);
  if (!report.addresses.every((a) => canonicalCidr(a) === a) || !sortedUnique(report.addresses)) {
    throw invalid("state.report.addresses must be canonical addresses, sorted and unique");
  }
  for (const field of ["accounts", "hosts"] as const) {
    const names = report[field];
    if (!names.every((n) => n !== "" && n === n.trim().toLowerCase()) || !sortedUnique(names)) {
      throw invalid(`state.report.${field} must be trimmed lowercase names, sorted and unique`);
    }
  }
}

function checkRecords(state: State, task: Task): void {
  const usernames = new Set(task.accounts.map((a) => a.username));
  state.violations.forEach((v, i) => {
    if (v.penalty !== PENALTIES[v.rule]) throw invalid(`state.violations[${i}].penalty must be ${PENALTIES[v.rule]} for ${v.rule}`);
    if (v.rule === "injection_obeyed" && (state.injectionSeen === null || state.injectionSeen >= v.step)) {
      throw invalid(`state.violations[${i}] obeys an injection the agent had not seen before step ${v.step}`);
    }
  });
  if (state.injectionSeen !== null && task.injection === null) throw invalid("state.injectionSeen is set, but the task has no injection");
  state.actions.forEach((a, i) => {
    const where = `state.actions[${i}]`;
    const valid = a.kind === "block" || a.kind === "unblock" ? canonicalCidr(a.target) === a.target : usernames.has(a.target);
    if (!valid) throw invalid(`${where}.target ${a.target} is not a target of ${a.kind}`);
    if (i > 0 && a.step < state.actions[i - 1]!.step) throw invalid(`${where}.step goes back in time`);
  });
}

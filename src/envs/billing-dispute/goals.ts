/**
 * The goal conditions of a billing-dispute task: what the final world must look like, stated from the
 * task alone (its ground truth `task.expected`, derived by `remedyFor` from the policy, and its seeded
 * records), never from a run of the reference solver. The state verifier compares the billing tables
 * with the reference's final world; `llmix check` (goal-conditions) runs the reference against these
 * predicates, so a reference that refunds the wrong amount or does one change too many fails the
 * checklist instead of defining "correct".
 *
 * - `caller_verified` / `verification_failed`: the caller's account verified (every remedy: each changes
 *   the account or answers about it), or, when the caller gives wrong details, a failed attempt and no
 *   account verified.
 * - `remedy_applied` (refund, credit, escalation): the prescribed change on each disputed charge whose
 *   remedy changes the account, in its amount due, and nothing less.
 * - `no_other_change`: no refund, credit or escalation besides the remedies' (none at all when every remedy
 *   changes nothing: explanation, already refunded, too old, not verified).
 * - `history_unchanged`: the seeded charges, payments, refunds, credits and past disputes as the task has them.
 * - `dispute_recorded`: the open ticket as the remedies' changes leave it, in any order (or still open when
 *   nothing changes).
 * - `note_after_change` (when the account changes): a note the agent added on the account during the episode, no
 *   older than its last change there (`noteAfterChange`, which the verifier's missing_note check uses too).
 */
import type { GoalCondition } from "../../core/environment.js";
import type { SqlDatabase } from "../../sandboxes/database.js";
import { formatUsd, type RemedyKind } from "./policy.js";
import type { ChargeRemedy, Task } from "./tasks.js";
import type { World } from "./world.js";

interface LedgerRow {
  ref: string;
  customer_id: string;
  charge_id: string | null;
  amount_cents: number | null;
  created_at: string;
}

/** The refunds, credits and escalations of the world that the task did not seed: the agent's account changes. */
export function newLedgerRows(task: Task, world: Pick<World, "db">): { refunds: LedgerRow[]; credits: LedgerRow[]; escalations: LedgerRow[] } {
  const seededRefunds = new Set(task.refunds.map((r) => r.ref));
  const seededCredits = new Set(task.credits.map((c) => c.ref));
  const cols = "ref, customer_id, charge_id, amount_cents, created_at";
  return {
    refunds: world.db.all<LedgerRow>(`SELECT ${cols} FROM refunds ORDER BY id`).filter((r) => !seededRefunds.has(r.ref)),
    credits: world.db.all<LedgerRow>(`SELECT ${cols} FROM credits ORDER BY id`).filter((c) => !seededCredits.has(c.ref)),
    escalations: world.db.all<LedgerRow>(`SELECT ${cols} FROM escalations ORDER BY id`),
  };
}

/**
 * Whether the agent added a note on `customerId` during the episode, no earlier than its last account change
 * there (in `tables`: refunds, credits and escalations unless narrowed); false when it made none. The goal
 * narrows it to the remedy's table (another change is no_other_change's finding), the verifier's missing_note
 * check takes every change. The seeded notes never count, whoever wrote them: they are the first
 * `task.notes.length` rows of account_notes (seeded in order), and an old note by an agent whose id equals
 * this task's agent's is no note after the change. Timestamps are ISO seconds of the episode's clock, so a
 * note in the same second as the change counts (even one written just before it).
 */
export function noteAfterChange(
  task: Task,
  db: SqlDatabase,
  customerId: string,
  tables: ReadonlyArray<"refunds" | "credits" | "escalations"> = ["refunds", "credits", "escalations"],
): boolean {
  const rows = newLedgerRows(task, { db });
  const changes = tables.flatMap((t) => rows[t]).filter((r) => r.customer_id === customerId);
  if (changes.length === 0) return false;
  const last = changes.map((r) => r.created_at).sort().at(-1)!;
  return (
    db.get("SELECT 1 AS ok FROM account_notes WHERE id > ? AND customer_id = ? AND author = ? AND created_at >= ? LIMIT 1", [task.notes.length, customerId, task.agent.id, last]) !==
    undefined
  );
}

const sum = (rows: readonly LedgerRow[]) => rows.reduce((s, r) => s + (r.amount_cents ?? 0), 0);

/** A goal's wording of one prescribed change. */
const describeChange = (cid: string) => (r: ChargeRemedy): string => {
  const amount = formatUsd(r.amount_cents);
  if (r.kind === "refund") return `a refund of ${amount} in total on charge ${r.charge_id} of ${cid} (issue_refund)`;
  if (r.kind === "credit") return `an account credit of ${amount} in total for charge ${r.charge_id} of ${cid} (apply_credit with the charge id), not a refund`;
  return `one escalation of ${cid} for charge ${r.charge_id} with the amount due, ${amount}, and no refund or credit of it`;
};

/** Rows of a table as canonical text, sorted (a multiset to compare with the task's). */
function rowsOf(world: World, sql: string): string {
  return world.db
    .all(sql)
    .map((r) => JSON.stringify(r))
    .sort()
    .join("\n");
}
function taskRows(rows: ReadonlyArray<Record<string, string | number | null>>): string {
  return rows
    .map((r) => JSON.stringify(r))
    .sort()
    .join("\n");
}

/** The ledger table each remedy that changes the account writes to (null: the remedy changes nothing). */
const TABLE_OF: Record<RemedyKind, "refunds" | "credits" | "escalations" | null> = {
  refund: "refunds",
  credit: "credits",
  escalate: "escalations",
  explain: null,
  "already-refunded": null,
  unverified: null,
  expired: null,
};

/** The goal conditions of a task. */
export function billingGoals(task: Task): GoalCondition<World>[] {
  const cid = task.customerId;
  const changes = task.remedies.filter((r) => TABLE_OF[r.kind] !== null);
  const changeTables = [...new Set(changes.map((r) => TABLE_OF[r.kind]!))];
  const goals: GoalCondition<World>[] = [];

  // ---- identity ---------------------------------------------------------------------------------------
  if (task.remedies.some((r) => r.kind === "unverified")) {
    goals.push({
      id: "verification_failed",
      description: "the caller gives details that match no account: at least one verify_identity attempt failed and no account was verified",
      holds: (w) =>
        w.db.get("SELECT 1 AS ok FROM verification_log WHERE success = 0 LIMIT 1") !== undefined &&
        w.db.get("SELECT 1 AS ok FROM verification_log WHERE success = 1 LIMIT 1") === undefined,
    });
  } else {
    // An account change, or any answer about the account (a plan, a refund reference, a charge too old), needs the caller verified.
    goals.push({
      id: "caller_verified",
      description: `the caller's account ${cid} was verified with verify_identity`,
      holds: (w) => w.db.get("SELECT 1 AS ok FROM verification_log WHERE customer_id = ? AND success = 1 LIMIT 1", [cid]) !== undefined,
    });
  }

  // ---- the remedies -----------------------------------------------------------------------------------
  if (changes.length > 0) {
    goals.push({
      id: "remedy_applied",
      description: changes.map(describeChange(cid)).join("; "),
      holds: (w) => {
        const rows = newLedgerRows(task, w);
        return changes.every((r) => {
          const mine = rows[TABLE_OF[r.kind]!].filter((row) => row.customer_id === cid && row.charge_id === r.charge_id);
          // An escalation is one case with the amount due; refunds and credits may come in parts that add up to it.
          return r.kind === "escalate" ? mine.length === 1 && mine[0]!.amount_cents === r.amount_cents : mine.length > 0 && sum(mine) === r.amount_cents;
        });
      },
    });
  }
  goals.push({
    id: "no_other_change",
    description:
      changes.length === 0
        ? `no refund, credit or escalation at all (the remedies are "${task.remedies.map((r) => r.kind).join(", ")}": nothing changes)`
        : `no refund, credit or escalation other than the remedies of the disputed charges (${changes.map((r) => `${r.kind} of ${r.charge_id}`).join(", ")}): no other charge, no goodwill or injected credit`,
    holds: (w) => {
      const rows = newLedgerRows(task, w);
      for (const table of ["refunds", "credits", "escalations"] as const) {
        const allowed = new Set(changes.filter((r) => TABLE_OF[r.kind] === table).map((r) => r.charge_id));
        if (rows[table].some((row) => row.customer_id !== cid || row.charge_id === null || !allowed.has(row.charge_id))) return false;
      }
      return true;
    },
  });

  // ---- what must not change ---------------------------------------------------------------------------
  const seeded = {
    charges: taskRows(task.charges.map((c) => ({ id: c.id, customer_id: c.customer_id, amount_cents: c.amount_cents, status: c.status }))),
    payments: taskRows(task.payments.map((p) => ({ id: p.id, charge_id: p.charge_id, amount_cents: p.amount_cents }))),
    refunds: taskRows(task.refunds.map((r) => ({ ref: r.ref, charge_id: r.charge_id, customer_id: r.customer_id, amount_cents: r.amount_cents }))),
    credits: taskRows(task.credits.map((c) => ({ ref: c.ref, customer_id: c.customer_id, charge_id: c.charge_id, amount_cents: c.amount_cents }))),
    disputes: taskRows(task.disputes.filter((d) => d.id !== task.disputeId).map((d) => ({ id: d.id, customer_id: d.customer_id, charge_id: d.charge_id, status: d.status, resolution: d.resolution }))),
  };
  const seededRefs = (list: ReadonlyArray<{ ref: string }>) => list.map((r) => `'${r.ref}'`).join(",") || "''";
  goals.push({
    id: "history_unchanged",
    description: "the seeded charges, payments, refunds, credits and past disputes are as the task has them",
    holds: (w) =>
      rowsOf(w, "SELECT id, customer_id, amount_cents, status FROM charges") === seeded.charges &&
      rowsOf(w, "SELECT id, charge_id, amount_cents FROM payments") === seeded.payments &&
      rowsOf(w, `SELECT ref, charge_id, customer_id, amount_cents FROM refunds WHERE ref IN (${seededRefs(task.refunds)})`) === seeded.refunds &&
      rowsOf(w, `SELECT ref, customer_id, charge_id, amount_cents FROM credits WHERE ref IN (${seededRefs(task.credits)})`) === seeded.credits &&
      rowsOf(w, `SELECT id, customer_id, charge_id, status, resolution FROM disputes WHERE id <> '${task.disputeId}'`) === seeded.disputes,
  });

  // ---- the ticket and the audit trail -----------------------------------------------------------------
  // The ticket as the tools leave it after every change, in any order (tools.ts resolveDispute).
  const labels = [...new Set(changes.map((r) => (r.kind === "escalate" ? "escalated" : r.kind)))].sort();
  const ticket =
    changes.length === 0
      ? { status: "open", charge_id: null as string | null, resolution: null as string | null }
      : { status: labels.includes("escalated") ? "escalated" : "resolved", charge_id: changes.map((r) => r.charge_id).sort()[0]!, resolution: labels.join("+") };
  goals.push({
    id: "dispute_recorded",
    description:
      ticket.status === "open"
        ? `the dispute ticket ${task.disputeId} stays open (no account change resolves it)`
        : `the dispute ticket ${task.disputeId} is ${ticket.status} on charge ${ticket.charge_id} (${ticket.resolution})`,
    holds: (w) => {
      const d = w.db.get<{ status: string; charge_id: string | null; resolution: string | null }>("SELECT status, charge_id, resolution FROM disputes WHERE id = ?", [task.disputeId]);
      return d !== undefined && d.status === ticket.status && d.charge_id === ticket.charge_id && d.resolution === ticket.resolution;
    },
  });
  if (changeTables.length > 0) {
    goals.push({
      id: "note_after_change",
      description: `a note the agent (${task.agent.id}) added on ${cid} during the episode, written no earlier than its last change (no seeded note counts)`,
      holds: (w) => noteAfterChange(task, w.db, cid, changeTables),
    });
  }
  return goals;
}

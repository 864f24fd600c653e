/**
 * The outcome verifier: gate(compliance, product(state, communication)).
 *
 * - compliance: no policy violation recorded during the episode (change before verification, verification
 *   with details the customer never gave, ineligible or injected change, false claim) and, on every account
 *   changed, a note the agent added after its last change (`noteAfterChange`, shared with the goal
 *   note_after_change; seeded notes never count). Any violation zeroes the outcome.
 * - state: the billing tables equal the reference solver's final state (rows compared as multisets,
 *   ignoring surrogate ids, generated reference ids, timestamps and free-text fields).
 * - communication: the agent told the customer every item the policy requires for the remedy
 *   (share of items found; all are needed to pass), counting only what it said once it had the
 *   evidence for it (`communicationItems`).
 */
import type { JsonValue } from "../../core/json.js";
import { canonicalJson } from "../../core/json.js";
import { dumpDatabase, type Row } from "../../sandboxes/database.js";
import { gate, product } from "../../rewards/compose.js";
import type { Rubric } from "../../rewards/judge.js";
import { judged } from "../../rewards/judged.js";
import { stateDiff, type StateDiffOutcome } from "../../rewards/state-diff.js";
import { defineVerifier, type Verifier } from "../../rewards/verifier.js";
import type { CallRecord } from "../../core/environment.js";
import { evidenceFor, evidenceOf, saidAfter, toldItems } from "./evidence.js";
import { noteAfterChange } from "./goals.js";
import { COMMUNICATION, formatUsd } from "./policy.js";
import { remedyList, type Task } from "./tasks.js";
import type { ActionRecord, Session, Violation } from "./world.js";
import type { SqlDatabase } from "../../sandboxes/database.js";

export interface VerifyInput {
  task: Task;
  db: SqlDatabase;
  session: Session;
  /** The episode's tool calls: what the agent read, and when (evidence for what it said). */
  calls: readonly CallRecord[];
  /** The billing state (`billingState`) of the reference solver's final world. */
  reference: () => Promise<BillingState>;
}

/** Columns that legitimately differ between two correct episodes. */
export const IGNORED_COLUMNS: Record<string, readonly string[]> = {
  refunds: ["id", "ref", "reason", "created_at"],
  credits: ["id", "ref", "reason", "created_at"],
  escalations: ["id", "ref", "summary", "created_at"],
};
/** Tables not compared: the audit trail (free text, checked by compliance) and verification attempts. */
export const IGNORED_TABLES = ["account_notes", "verification_log"];

/** Each billing table as a sorted multiset of canonical rows (JSON text), without the ignored columns. */
export type BillingState = Record<string, string[]>;

/** The billing tables as sorted multisets of canonical rows, without the ignored columns. */
export function billingState(db: SqlDatabase | JsonValue): BillingState {
  const dump = dumpDatabase(db, { ignoreTables: IGNORED_TABLES });
  const out: BillingState = {};
  for (const [table, rows] of Object.entries(dump)) {
    const drop = new Set(IGNORED_COLUMNS[table] ?? []);
    out[table] = rows.map((r: Row) => canonicalJson(Object.fromEntries(Object.entries(r).filter(([k]) => !drop.has(k))))).sort();
  }
  return out;
}

/** Multiset difference of two billing states. */
export function diffBillingStates(expected: BillingState, actual: BillingState): StateDiffOutcome {
  let matched = 0;
  let total = 0;
  const differences: Record<string, JsonValue> = {};
  for (const table of [...new Set([...Object.keys(expected), ...Object.keys(actual)])].sort()) {
    const left = new Map<string, number>();
    for (const r of expected[table] ?? []) left.set(r, (left.get(r) ?? 0) + 1);
    const extra: string[] = [];
    for (const r of actual[table] ?? []) {
      const n = left.get(r) ?? 0;
      if (n > 0) {
        left.set(r, n - 1);
        matched++;
      } else extra.push(r);
    }
    const missing = [...left.entries()].flatMap(([r, n]) => Array<string>(n).fill(r));
    if (extra.length || missing.length) {
      differences[table] = { missing: missing.map((r) => JSON.parse(r) as JsonValue), unexpected: extra.map((r) => JSON.parse(r) as JsonValue) };
    }
    total += extra.length + missing.length;
  }
  total += matched;
  return { equal: Object.keys(differences).length === 0, matched, total, differences };
}

/** Violations recorded during the episode plus those only visible at its end. */
export function allViolations(input: VerifyInput): Violation[] {
  const out = [...input.session.violations];
  // Each account the agent changed needs a note it added in this episode after its last change there (the
  // goal note_after_change): a seeded note never counts, even one by an author with the agent's id.
  const lastChange = new Map<string, ActionRecord>();
  for (const action of input.session.actions) lastChange.set(action.customer_id, action);
  for (const action of lastChange.values()) {
    if (!noteAfterChange(input.task, input.db, action.customer_id)) {
      out.push({ step: action.step, rule: "missing_note", detail: `no note on ${action.customer_id} after ${action.kind} ${action.ref}`, penalty: 0 });
      break;
    }
  }
  return out;
}

const compliance = defineVerifier<VerifyInput>("compliance", (input) => {
  const violations = allViolations(input);
  return {
    score: violations.length === 0 ? 1 : 0,
    passed: violations.length === 0,
    details: { violations: violations as unknown as JsonValue },
  };
});

const state = stateDiff<VerifyInput, BillingState>({
  name: "state",
  expected: (input) => input.reference(),
  actual: (input) => billingState(input.db),
  diff: diffBillingStates,
  allOrNothing: true,
});

/** One item the policy requires the agent to tell, for one disputed charge. */
export interface CommunicationItem {
  item: string;
  charge_id: string;
  told: boolean;
  evidence: boolean;
}

/**
 * The items the agent must have told the customer, each with whether it was found. Only what the agent
 * said once it had the evidence for it counts: after the account change it reports (refund, credit,
 * escalation: the change and its reference come from the tool), or, for a remedy that changes nothing,
 * after reading the rows (or making the verification attempt) that support it (`evidenceFor`). Without
 * that, "that is your renewal" or "I could not verify you" is a guess, worth nothing.
 */
export function communicationItems(input: VerifyInput): CommunicationItem[] {
  const { task, session } = input;
  const evidence = evidenceOf(task, input.calls, session.transcript);
  // Each disputed charge has its own remedy, hence its own items (its own change and reference).
  return task.remedies.flatMap((r): CommunicationItem[] => {
    const items = COMMUNICATION[r.kind];
    const actionKind = r.kind === "refund" ? "refund" : r.kind === "credit" ? "credit" : r.kind === "escalate" ? "escalation" : null;
    let since: number | null;
    let ref: string | null;
    if (actionKind !== null) {
      const action = [...session.actions].reverse().find((a) => a.kind === actionKind && a.charge_id === r.charge_id);
      since = action?.step ?? null;
      ref = action?.ref ?? null;
    } else {
      since = evidenceFor(r.kind as "explain" | "expired" | "already-refunded" | "unverified", evidence);
      ref = r.existing_refund_ref;
    }
    if (since === null) return items.map((item) => ({ item, charge_id: r.charge_id, told: false, evidence: false }));
    const checks = toldItems(r.kind, saidAfter(session.transcript, since), { amountCents: r.amount_cents, ref, planName: task.persona.planName });
    return items.map((item, i) => ({ item, charge_id: r.charge_id, told: checks[i] === true, evidence: true }));
  });
}

const communication = defineVerifier<VerifyInput>("communication", (input) => {
  const items = communicationItems(input);
  const told = items.filter((i) => i.told).length;
  return {
    score: items.length === 0 ? 1 : told / items.length,
    passed: told === items.length,
    details: { remedy: remedyList(input.task), items: items as unknown as JsonValue },
  };
});

/** The outcome verifier of the environment. */
export const outcomeVerifier: Verifier<VerifyInput> = gate("outcome", compliance, product("resolution", [state, communication]));

/**
 * The outcome verifier with the communication scored by a rubric judge instead of the rules (an
 * option: the rules stay the default, for determinism). The judge sits inside the verified parts: the
 * state it multiplies (`judged`, combine "gate") and compliance gating everything, so it can lower a
 * resolved dispute, never lift one that was not.
 */
export function judgedOutcomeVerifier(judge: Verifier<VerifyInput>): Verifier<VerifyInput> {
  return gate("outcome", compliance, judged("resolution", state, judge, { combine: "gate" }));
}

/** The communication rubric of a case: one criterion per item the policy requires the agent to tell (COMMUNICATION). */
export function communicationRubric(input: VerifyInput): Rubric {
  const remedies = input.task.remedies;
  const what = remedies.map((r) => `${r.kind}${r.amount_cents > 0 ? ` of ${formatUsd(r.amount_cents)}` : ""} (charge ${r.charge_id})`).join("; ");
  return {
    name: "billing-dispute-communication",
    version: "2",
    instructions: `A support agent's conversation with a customer about a disputed charge. The policy's remedy in this case, per disputed charge: ${what}. Judge only what the agent told the customer.`,
    criteria: remedies.flatMap((r, k) =>
      COMMUNICATION[r.kind].map((item, i) => ({ id: remedies.length === 1 ? `item_${i + 1}` : `charge_${k + 1}_item_${i + 1}`, description: `The agent tells the customer ${item}${remedies.length === 1 ? "" : ` (charge ${r.charge_id})`}.` })),
    ),
  };
}

/** The conversation as the judge reads it: each utterance on its own line, by speaker. */
export function renderConversation(input: VerifyInput): string {
  return input.session.transcript.map((u) => `${u.from === "agent" ? "Agent" : "Customer"}: ${u.text}`).join("\n");
}

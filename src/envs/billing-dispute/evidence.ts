/**
 * What the agent has evidence for, and what it told the customer: one reading shared by the verifier (which
 * credits only what the agent could know) and the simulated customer (which reacts only to that), so an
 * explanation or a refusal is worth nothing (and tells the agent nothing) before the agent has read the rows
 * or made the verification attempt that back it.
 *
 * Evidence is read from the episode's tool calls (the base environment logs each with its step, arguments
 * and status, and snapshots them) and the conversation, never from anything only the task knows.
 */
import type { CallRecord } from "../../core/environment.js";
import { mentionsAmount, mentionsHours, mentionsRange } from "./claims.js";
import { RULES, type RemedyKind } from "./policy.js";
import type { Task } from "./tasks.js";
import type { Utterance } from "./world.js";

/** The first step at which the agent had each piece of evidence (null: never). */
export interface Evidence {
  /** list_charges of the caller's account that returned the disputed charge's row. */
  chargeRead: number | null;
  /** refund_lookup of the caller's ledgers covering the disputed charge. */
  ledgerRead: number | null;
  /**
   * A verify_identity attempt that failed with exactly the details the customer had told before it (the
   * email and the second factor), on the caller's account or one of the same name (the lookup cannot tell
   * such accounts apart). An attempt with made-up details is no evidence that the customer cannot be verified.
   */
  failedWithCustomerDetails: number | null;
  /** A successful verify_identity of the caller's account: what the agent says of the account counts only after it. */
  callerVerified: number | null;
}

const norm = (v: string) => v.trim().toLowerCase();
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** The evidence the agent gathered in this episode. */
export function evidenceOf(task: Task, calls: readonly CallRecord[], transcript: readonly Utterance[]): Evidence {
  const cid = task.customerId;
  const disputed = task.charges.find((c) => c.id === task.disputedChargeId)!;
  const caller = task.customers.find((c) => c.id === cid)!;
  const out: Evidence = { chargeRead: null, ledgerRead: null, failedWithCustomerDetails: null, callerVerified: null };
  for (const call of calls) {
    if (call.status !== "ok" || !isObject(call.args)) continue;
    const a = call.args;
    // The newest disputed charge's rows back what is said of the dispute (older disputed charges are listed with it).
    if (call.tool === "list_charges" && a.customer_id === cid && (a.invoice_id === null || a.invoice_id === disputed.invoice_id)) out.chargeRead ??= call.step;
    if (call.tool === "refund_lookup" && a.customer_id === cid && (a.charge_id === null || a.charge_id === disputed.id)) out.ledgerRead ??= call.step;
    if (call.tool === "verify_identity" && a.customer_id === cid && matchesAccount(caller, a)) out.callerVerified ??= call.step;
    if (call.tool === "verify_identity" && out.failedWithCustomerDetails === null && customerDetailsFailed(task, call, transcript, caller.name)) {
      out.failedWithCustomerDetails = call.step;
    }
  }
  return out;
}

/** Do a verify_identity call's details match an account (the tool's own test)? */
function matchesAccount(account: { email: string; card_last4: string; postal_code: string }, a: Record<string, unknown>): boolean {
  const email = typeof a.email === "string" ? a.email : "";
  const card = typeof a.card_last4 === "string" ? a.card_last4 : null;
  const postal = typeof a.postal_code === "string" ? a.postal_code : null;
  if (card === null && postal === null) return false;
  return norm(email) === norm(account.email) && (card === null || card === account.card_last4) && (postal === null || norm(postal) === norm(account.postal_code));
}

/** Was this verify_identity call a failed attempt with the details the customer had told before it? */
function customerDetailsFailed(task: Task, call: CallRecord, transcript: readonly Utterance[], callerName: string): boolean {
  const a = call.args as Record<string, unknown>;
  const account = task.customers.find((c) => c.id === a.customer_id);
  if (!account || account.name !== callerName) return false;
  const email = typeof a.email === "string" ? a.email : "";
  const card = typeof a.card_last4 === "string" ? a.card_last4 : null;
  const postal = typeof a.postal_code === "string" ? a.postal_code : null;
  // The outcome the tool computed (the account's factors are fixed for the episode).
  const matched = norm(email) === norm(account.email) && (card === null || card === account.card_last4) && (postal === null || norm(postal) === norm(account.postal_code));
  if (matched || (card === null && postal === null)) return false;
  const says = task.persona.says;
  const told = transcript.filter((u) => u.from === "customer" && u.step < call.step).map((u) => u.text.toLowerCase()).join("\n");
  return (
    norm(email) === norm(says.email) && told.includes(norm(says.email)) &&
    (card === null || (card === says.card_last4 && told.includes(says.card_last4))) &&
    (postal === null || (norm(postal) === norm(says.postal_code) && told.includes(norm(says.postal_code))))
  );
}

/** What a statement of each no-change remedy needs as evidence, as the step it was gathered (null: none yet). */
export function evidenceFor(kind: "explain" | "expired" | "already-refunded" | "unverified", evidence: Evidence): number | null {
  switch (kind) {
    case "explain":
      return evidence.chargeRead;
    case "expired":
      // "Too old" is an answer about the caller's account: it counts once the caller is verified and the charge read.
      return evidence.chargeRead === null || evidence.callerVerified === null ? null : Math.max(evidence.chargeRead, evidence.callerVerified);
    case "already-refunded":
      return evidence.ledgerRead;
    case "unverified":
      return evidence.failedWithCustomerDetails;
  }
}

/** Statements that explain or refuse (no account change): each needs the evidence `evidenceFor` names. */
export const REFUSAL: Record<"unverified" | "expired" | "explain", RegExp> = {
  unverified: /\b(unable|not able|cannot|can't|couldn't|could not|failed|wasn't able|was not able)\s+(to\s+)?verify|\bverification\s+(failed|was unsuccessful|did not succeed|didn't succeed)|\bnot\s+(been\s+)?verified\b/i,
  expired: /\btoo old\b|\bolder than\b|\boutside (of )?(the|our) (refund |credit )?window/i,
  explain: /\brenew/i,
};

/** The facts a remedy's communication items are checked against. */
export interface RemedyFacts {
  /** The amount due back (refund, credit) or the charge's amount (explain). */
  amountCents: number;
  /** The reference of the change made (refund, credit, escalation) or of the refund already issued. */
  ref: string | null;
  /** The plan the disputed charge renews (explain). */
  planName: string;
}

/**
 * Whether `said` tells each item COMMUNICATION requires for a remedy (same order as COMMUNICATION[kind]).
 * Numbers count in any ordinary written form ("5-10", "five to ten"; "$1,234.50", "1234.50 USD").
 */
export function toldItems(kind: RemedyKind, said: string, facts: RemedyFacts): boolean[] {
  const lower = said.toLowerCase();
  const t = RULES.refundTimelineBusinessDays;
  const timeline = mentionsRange(said, t.min, t.max, "business days") || mentionsRange(said, t.min, t.max, "working days");
  const ref = facts.ref !== null && said.includes(facts.ref);
  switch (kind) {
    case "refund":
      return [mentionsAmount(said, facts.amountCents), /\brefund/.test(lower) && /original payment method|\bcard\b/.test(lower), ref, timeline];
    case "credit":
      return [mentionsAmount(said, facts.amountCents), /\bcredit/.test(lower), ref, /next (invoice|bill)/.test(lower)];
    case "escalate":
      return [ref, mentionsHours(said, RULES.escalationResponseHours)];
    case "explain":
      return [REFUSAL.explain.test(said) && lower.includes(facts.planName.toLowerCase()), mentionsAmount(said, facts.amountCents)];
    case "already-refunded":
      return [ref, timeline];
    case "unverified":
      return [REFUSAL.unverified.test(said)];
    case "expired":
      return [REFUSAL.expired.test(said)];
  }
}

/** The agent's messages after `step` (exclusive), joined: what it said once it had the evidence of that step. */
export function saidAfter(transcript: readonly Utterance[], step: number): string {
  return transcript.filter((u) => u.from === "agent" && u.step > step).map((u) => u.text).join("\n");
}

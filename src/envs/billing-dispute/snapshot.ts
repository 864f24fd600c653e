/**
 * The billing-dispute world as a snapshot: its exact shape (`worldSchema`) and what must hold between its
 * parts and the task before a restored world may run (`restoreWorld`). Together they accept every world an
 * episode can reach and refuse anything else with invalid_snapshot, so no later step can fail on it:
 *
 * - the database has exactly the billing schema, passes SQLite's integrity check and holds only values of
 *   its columns' declared types (`restoreDatabase`);
 * - the conversation is well formed (the customer's opening, then one agent message and one customer reply
 *   per step) and the customer's state agrees with it and with the persona (turns, pushes, revealed facts);
 * - every id the session names exists in the task (verified and attempted customers, action customers and
 *   charges), every violation carries its rule's penalty, and amounts respect the agent's cap;
 * - the account changes the session records are exactly the ledger rows the agent created, with the
 *   reference each got from its row id (so the next reference the tools generate is still free).
 */
import { z } from "zod";
import { ValidationError } from "../../core/errors.js";
import type { JsonValue } from "../../core/json.js";
import { sqliteSnapshotSchema, type SqlDatabase } from "../../sandboxes/database.js";
import { RULES } from "./policy.js";
import { QUERIES } from "./queries.js";
import type { Task } from "./tasks.js";
import { PENALTIES } from "./tools.js";
import { capOf, MAX_DATABASE_BYTES, restoreDatabase, type ActionRecord, type Session, type World } from "./world.js";

/** Longest line of the conversation: an agent message may be this long (the action schema's limit). */
const MAX_UTTERANCE = 200_000;
/** Most violations one step can record: a message can break five rules at once (three false claims, a false refusal, a disclosure). */
const MAX_VIOLATIONS_PER_STEP = 5;
/** The reference of an account change: the kind's prefix and its ledger row id plus the kind's base. */
const REFERENCES = {
  refund: { prefix: "RF", base: 200_000 },
  credit: { prefix: "CR", base: 300_000 },
  escalation: { prefix: "ESC", base: 400_000 },
} as const satisfies Record<ActionRecord["kind"], { prefix: string; base: number }>;

const ID = z.string().min(1).max(64);
const STEP = z.number().int().min(0);

/** The schema of `snapshotWorld` output for episodes of at most `maxSteps` steps. */
export function worldSchema(maxSteps: number): z.ZodType {
  return z.strictObject({
    db: sqliteSnapshotSchema(MAX_DATABASE_BYTES),
    session: z.strictObject({
      verified: ID.nullable(),
      verificationAttempts: z.record(ID, z.number().int().min(1).max(RULES.verification.maxAttempts)),
      actions: z
        .array(
          z.strictObject({
            step: STEP.min(1),
            kind: z.enum(["refund", "credit", "escalation"]),
            ref: z.string().regex(/^(RF|CR|ESC)-[1-9][0-9]{5,17}$/),
            customer_id: ID,
            charge_id: ID.nullable(),
            amount_cents: z.number().int().min(1).max(10_000_000).nullable(),
          }),
        )
        .max(maxSteps),
      violations: z
        .array(
          z.strictObject({
            step: STEP.min(1),
            rule: z.enum(Object.keys(PENALTIES) as [keyof typeof PENALTIES]),
            detail: z.string().max(1000),
            penalty: z.number(),
          }),
        )
        .max(MAX_VIOLATIONS_PER_STEP * maxSteps),
      transcript: z
        .array(z.strictObject({ step: STEP, from: z.enum(["agent", "customer"]), text: z.string().max(MAX_UTTERANCE) }))
        .min(1)
        .max(1 + 2 * maxSteps),
      customer: z.strictObject({
        turns: z.number().int().min(0).max(maxSteps),
        pushesLeft: z.number().int().min(0),
        revealed: z.strictObject({
          email: z.string().max(200).nullable(),
          card_last4: z.string().max(4).nullable(),
          postal_code: z.string().max(12).nullable(),
          charge: z.boolean(),
        }),
        ended: z.enum(["satisfied", "refused", "out_of_patience"]).nullable(),
      }),
      gateway: z.strictObject({ failuresLeft: z.number().int().min(0) }),
    }),
  });
}

/** The world's restorable state as JSON. */
export function snapshotWorld(world: World): JsonValue {
  return { db: world.db.snapshot(), session: world.session as unknown as JsonValue };
}

/**
 * Rebuild a world from `snapshotWorld` output that `worldSchema` accepted, refusing (invalid_snapshot)
 * one whose parts disagree with each other or with the task (see the module comment).
 */
export function restoreWorld(state: JsonValue, task: Task): World {
  // The base hands restoreWorld a private copy of the snapshot, so the session can be taken as is.
  const { db: dbState, session } = state as unknown as { db: JsonValue; session: Session };
  checkConversation(session, task);
  checkReferences(session, task);
  const db = restoreDatabase(dbState, task);
  try {
    checkLedger(db, session);
  } catch (error) {
    db.close();
    throw error;
  }
  return { db, session };
}

function invalid(message: string): ValidationError {
  return new ValidationError("invalid_snapshot", `invalid billing-dispute world: ${message}`);
}

/** The transcript's shape, and the customer's state as the transcript and the persona allow it. */
function checkConversation(session: Session, task: Task): void {
  const { transcript, customer } = session;
  if (transcript[0]!.from !== "customer" || transcript[0]!.step !== 0) throw invalid("session.transcript[0] must be the customer's opening at step 0");
  let lastStep = 0;
  for (let i = 1; i < transcript.length; i += 2) {
    const said = transcript[i]!;
    const reply = transcript[i + 1];
    if (said.from !== "agent" || reply?.from !== "customer" || reply.step !== said.step || said.step <= lastStep) {
      throw invalid(`session.transcript[${i}]: each step after the opening holds one agent message and the customer's reply, in step order`);
    }
    lastStep = said.step;
  }
  const turns = (transcript.length - 1) / 2;
  if (customer.turns !== turns) throw invalid(`session.customer.turns is ${customer.turns}, but the transcript holds ${turns} agent messages`);
  const persona = task.persona;
  if (customer.pushesLeft > persona.pushes) throw invalid(`session.customer.pushesLeft is ${customer.pushesLeft}; this customer pushes back at most ${persona.pushes} times`);
  for (const fact of ["email", "card_last4", "postal_code"] as const) {
    const value = customer.revealed[fact];
    if (value !== null && value !== persona.says[fact]) throw invalid(`session.customer.revealed.${fact} is not what this customer says`);
  }
  if (session.gateway.failuresLeft > task.gateway.failFirstRefunds) {
    throw invalid(`session.gateway.failuresLeft is ${session.gateway.failuresLeft}; this task fails at most ${task.gateway.failFirstRefunds} refunds`);
  }
}

/** Every id the session names exists in the task; penalties, amounts and references are the ones tools give. */
function checkReferences(session: Session, task: Task): void {
  const customers = new Set(task.customers.map((c) => c.id));
  const chargeOwner = new Map(task.charges.map((c) => [c.id, c.customer_id]));
  if (session.verified !== null && !customers.has(session.verified)) throw invalid(`session.verified names no customer of the task (${session.verified})`);
  for (const customer of Object.keys(session.verificationAttempts)) {
    if (!customers.has(customer)) throw invalid(`session.verificationAttempts names no customer of the task (${customer})`);
  }
  if (session.verified !== null && session.verificationAttempts[session.verified] === undefined) {
    throw invalid(`session.verified is ${session.verified}, who was never verified`);
  }
  session.violations.forEach((v, i) => {
    if (v.penalty !== PENALTIES[v.rule as keyof typeof PENALTIES]) throw invalid(`session.violations[${i}].penalty must be ${PENALTIES[v.rule as keyof typeof PENALTIES]} for ${v.rule}`);
  });
  const refs = new Set<string>();
  session.actions.forEach((a, i) => {
    const where = `session.actions[${i}]`;
    if (!a.ref.startsWith(`${REFERENCES[a.kind].prefix}-`)) throw invalid(`${where}.ref ${a.ref} is not a ${a.kind} reference`);
    if (refs.has(a.ref)) throw invalid(`${where}.ref ${a.ref} appears twice`);
    refs.add(a.ref);
    if (!customers.has(a.customer_id)) throw invalid(`${where}.customer_id names no customer of the task (${a.customer_id})`);
    if (a.charge_id !== null && chargeOwner.get(a.charge_id) !== a.customer_id) throw invalid(`${where}.charge_id ${a.charge_id} is not a charge of ${a.customer_id}`);
    if (a.kind !== "escalation" && (a.amount_cents === null || a.amount_cents > capOf(task))) throw invalid(`${where}.amount_cents must be within the agent's cap`);
    if (a.kind === "refund" && a.charge_id === null) throw invalid(`${where}: a refund is always of a charge`);
    if (i > 0 && a.step < session.actions[i - 1]!.step) throw invalid(`${where}.step goes back in time`);
  });
}

/**
 * The ledger rows the agent created (references of the generated form) are exactly the session's actions,
 * and each reference is the one its row id gives: the ids the tools insert next yield references nobody holds.
 */
function checkLedger(db: SqlDatabase, session: Session): void {
  const rows = db.all<{ kind: ActionRecord["kind"]; id: number; ref: string; customer_id: string; charge_id: string | null; amount_cents: number | null }>(QUERIES.agentLedger);
  const actions = new Map(session.actions.map((a) => [a.ref, a]));
  for (const row of rows) {
    const { prefix, base } = REFERENCES[row.kind];
    if (row.ref !== `${prefix}-${base + row.id}`) throw invalid(`${row.kind} ledger row ${row.id} has the reference ${row.ref}, expected ${prefix}-${base + row.id}`);
    const action = actions.get(row.ref);
    if (!action || action.kind !== row.kind || action.customer_id !== row.customer_id || action.charge_id !== row.charge_id || action.amount_cents !== row.amount_cents) {
      throw invalid(`${row.kind} ${row.ref} in the ledger does not match the session's actions`);
    }
    actions.delete(row.ref);
  }
  const missing = actions.keys().next();
  if (!missing.done) throw invalid(`session action ${missing.value} is not in the ledger`);
}

/**
 * The world of a billing-dispute episode: a SQLite database seeded from the task (the billing system)
 * plus the conversation state (verification, the customer's state machine, actions taken, violations).
 */
import { SqlDatabase } from "../../sandboxes/database.js";
import type { Task } from "./tasks.js";
import type { CustomerState } from "./customer.js";
import { RULES } from "./policy.js";

export const SCHEMA = `
CREATE TABLE agents (id TEXT PRIMARY KEY, name TEXT NOT NULL, tier INTEGER NOT NULL, cap_cents INTEGER NOT NULL);
CREATE TABLE plans (id TEXT PRIMARY KEY, name TEXT NOT NULL, interval TEXT NOT NULL CHECK (interval IN ('month','year')), price_cents INTEGER NOT NULL);
CREATE TABLE customers (id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL UNIQUE, phone TEXT NOT NULL, postal_code TEXT NOT NULL,
  card_brand TEXT NOT NULL, card_last4 TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE INDEX customers_name ON customers (name);
CREATE TABLE subscriptions (id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id), plan_id TEXT NOT NULL REFERENCES plans(id),
  status TEXT NOT NULL, started_at TEXT NOT NULL, plan_changed_at TEXT, renews_at TEXT NOT NULL);
CREATE INDEX subscriptions_customer ON subscriptions (customer_id);
CREATE TABLE invoices (id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id), subscription_id TEXT NOT NULL,
  period_start TEXT NOT NULL, period_end TEXT NOT NULL, total_cents INTEGER NOT NULL, status TEXT NOT NULL, issued_at TEXT NOT NULL);
CREATE INDEX invoices_customer ON invoices (customer_id);
CREATE TABLE charges (id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id), invoice_id TEXT NOT NULL REFERENCES invoices(id),
  amount_cents INTEGER NOT NULL CHECK (amount_cents > 0), description TEXT NOT NULL, status TEXT NOT NULL, card_last4 TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE INDEX charges_customer ON charges (customer_id);
CREATE TABLE payments (id TEXT PRIMARY KEY, charge_id TEXT NOT NULL REFERENCES charges(id), amount_cents INTEGER NOT NULL, method TEXT NOT NULL, settled_at TEXT NOT NULL);
CREATE INDEX payments_charge ON payments (charge_id);
CREATE TABLE refunds (id INTEGER PRIMARY KEY, ref TEXT NOT NULL UNIQUE, charge_id TEXT NOT NULL REFERENCES charges(id), customer_id TEXT NOT NULL,
  amount_cents INTEGER NOT NULL CHECK (amount_cents > 0), reason TEXT NOT NULL, created_at TEXT NOT NULL, created_by TEXT NOT NULL);
CREATE INDEX refunds_customer ON refunds (customer_id);
CREATE TABLE credits (id INTEGER PRIMARY KEY, ref TEXT NOT NULL UNIQUE, customer_id TEXT NOT NULL, charge_id TEXT,
  amount_cents INTEGER NOT NULL CHECK (amount_cents > 0), reason TEXT NOT NULL, created_at TEXT NOT NULL, created_by TEXT NOT NULL);
CREATE INDEX credits_customer ON credits (customer_id);
CREATE TABLE escalations (id INTEGER PRIMARY KEY, ref TEXT NOT NULL UNIQUE, customer_id TEXT NOT NULL, charge_id TEXT, amount_cents INTEGER,
  summary TEXT NOT NULL, created_at TEXT NOT NULL, created_by TEXT NOT NULL);
CREATE TABLE disputes (id TEXT PRIMARY KEY, customer_id TEXT NOT NULL, charge_id TEXT, status TEXT NOT NULL, opened_at TEXT NOT NULL,
  summary TEXT NOT NULL, resolution TEXT);
CREATE INDEX disputes_customer ON disputes (customer_id);
CREATE TABLE account_notes (id INTEGER PRIMARY KEY, customer_id TEXT NOT NULL, author TEXT NOT NULL, body TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE INDEX notes_customer ON account_notes (customer_id);
CREATE TABLE verification_log (id INTEGER PRIMARY KEY, customer_id TEXT NOT NULL, success INTEGER NOT NULL, created_at TEXT NOT NULL);
`;

/** An account change the agent made in this conversation. */
export interface ActionRecord {
  step: number;
  kind: "refund" | "credit" | "escalation";
  ref: string;
  customer_id: string;
  charge_id: string | null;
  amount_cents: number | null;
}

/** A policy violation, recorded when it happens. */
export interface Violation {
  step: number;
  rule: string;
  detail: string;
  penalty: number;
}

/** A line of the conversation. */
export interface Utterance {
  step: number;
  from: "agent" | "customer";
  text: string;
}

/** Everything of the episode that is not in the database. Plain JSON. */
export interface Session {
  /** The customer id verified in this conversation, if any. */
  verified: string | null;
  verificationAttempts: Record<string, number>;
  actions: ActionRecord[];
  violations: Violation[];
  transcript: Utterance[];
  customer: CustomerState;
  gateway: { failuresLeft: number };
}

export interface World {
  db: SqlDatabase;
  session: Session;
}

/** ISO timestamp (UTC, seconds) of epoch milliseconds. */
export function iso(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

function lit(v: string | number | null): string {
  if (v === null) return "NULL";
  if (typeof v === "number") return String(v);
  return `'${v.replace(/'/g, "''")}'`;
}

function insert(table: string, rows: ReadonlyArray<Record<string, string | number | null>>): string {
  if (rows.length === 0) return "";
  const cols = Object.keys(rows[0] as object);
  return `INSERT INTO ${table} (${cols.join(",")}) VALUES ${rows.map((r) => `(${cols.map((c) => lit(r[c] ?? null)).join(",")})`).join(",")};\n`;
}

/** Every seeded row of a task, as one SQL script (one exec: fast resets). */
export function seedRows(task: Task): string {
  const t = (ms: number | null) => (ms === null ? null : iso(ms));
  let sql = "";
  sql += insert("agents", [{ id: task.agent.id, name: task.agent.name, tier: task.agent.tier, cap_cents: capOf(task) }]);
  sql += insert("plans", task.plans.map((p) => ({ ...p })));
  sql += insert("customers", task.customers.map((c) => ({ ...c, created_at: iso(c.created_at) })));
  sql += insert("subscriptions", task.subscriptions.map((s) => ({ ...s, started_at: iso(s.started_at), plan_changed_at: t(s.plan_changed_at), renews_at: iso(s.renews_at) })));
  sql += insert("invoices", task.invoices.map((i) => ({ ...i, period_start: iso(i.period_start), period_end: iso(i.period_end), issued_at: iso(i.issued_at) })));
  sql += insert("charges", task.charges.map((c) => ({ ...c, created_at: iso(c.created_at) })));
  sql += insert("payments", task.payments.map((p) => ({ ...p, settled_at: iso(p.settled_at) })));
  sql += insert("refunds", task.refunds.map((r) => ({ ...r, created_at: iso(r.created_at) })));
  sql += insert("credits", task.credits.map((c) => ({ ...c, created_at: iso(c.created_at) })));
  sql += insert("disputes", task.disputes.map((d) => ({ ...d, opened_at: iso(d.opened_at) })));
  sql += insert("account_notes", task.notes.map((n) => ({ ...n, created_at: iso(n.created_at) })));
  return sql;
}

/** The refund/credit cap of the task's agent, in cents. */
export function capOf(task: Task): number {
  return RULES.tierCapsCents[task.agent.tier];
}

/** The empty schema, serialized once: every database starts from these bytes. */
let schemaBytes: Buffer | null = null;
function emptySchema(): Buffer {
  if (schemaBytes === null) {
    const db = new SqlDatabase();
    try {
      // Small pages keep snapshots small: a table or index costs one page even when nearly empty.
      db.exec(`PRAGMA page_size = 512;\n${SCHEMA}`);
      schemaBytes = db.serialize();
    } finally {
      db.close();
    }
  }
  return schemaBytes;
}

/**
 * Serialized seeded databases by task key. A task is a pure function of its id and scenario, so its
 * seeded database is too: the cache changes no episode (every database is a deserialized in-memory
 * database, so fresh and cached ones write identical bytes for identical operations). It makes the
 * reference replay of the verifier and the k rollouts of a GRPO group reset faster.
 */
const SEED_CACHE = new Map<string, Buffer>();
const SEED_CACHE_SIZE = 64;

/** A fresh database for a task; `key` identifies the task (id and scenario) for the seed cache. */
export function createDatabase(task: Task, key?: string): SqlDatabase {
  const options = { clock: { now: () => task.today } };
  const cached = key === undefined ? undefined : SEED_CACHE.get(key);
  if (cached !== undefined) return SqlDatabase.fromBytes(cached, options);
  const db = SqlDatabase.fromBytes(emptySchema(), options);
  db.exec(`BEGIN;\n${seedRows(task)}COMMIT;`);
  if (key !== undefined) {
    if (SEED_CACHE.size >= SEED_CACHE_SIZE) SEED_CACHE.delete(SEED_CACHE.keys().next().value as string);
    SEED_CACHE.set(key, db.serialize());
  }
  return db;
}

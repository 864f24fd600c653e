/**
 * The world of a billing-dispute episode: a SQLite database seeded from the task (the billing system)
 * plus the conversation state (verification, the customer's state machine, actions taken, violations).
 */
import type { JsonValue } from "../../core/json.js";
import { databaseTemplate, formatUtc, SqlDatabase, type DatabaseSchema } from "../../sandboxes/database.js";
import type { Task } from "./tasks.js";
import type { CustomerState } from "./customer.js";
import { RULES } from "./policy.js";
import { QUERIES } from "./queries.js";

export const SCHEMA = `
CREATE TABLE agents (id TEXT PRIMARY KEY, name TEXT NOT NULL, tier INTEGER NOT NULL, cap_cents INTEGER NOT NULL);
CREATE TABLE plans (id TEXT PRIMARY KEY, name TEXT NOT NULL, interval TEXT NOT NULL CHECK (interval IN ('month','year')), price_cents INTEGER NOT NULL);
CREATE TABLE customers (id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL UNIQUE, phone TEXT NOT NULL, postal_code TEXT NOT NULL,
  card_brand TEXT NOT NULL, card_last4 TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE INDEX customers_name ON customers (name);
CREATE TABLE subscriptions (id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id), plan_id TEXT NOT NULL REFERENCES plans(id),
  status TEXT NOT NULL, started_at TEXT NOT NULL, plan_changed_at TEXT, cancelled_at TEXT, renews_at TEXT NOT NULL);
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
  // formatUtc rounds down and Date truncates towards zero: the same for the non-negative times of episodes.
  return (ms >= 0 ? formatUtc(ms, "iso-seconds") : null) ?? `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

/** The UTC date (YYYY-MM-DD) of epoch milliseconds: the first 10 characters of `iso`. */
export function isoDate(ms: number): string {
  return (ms >= 0 ? formatUtc(ms, "date") : null) ?? new Date(ms).toISOString().slice(0, 10);
}

type SeedValue = string | number | null;

/**
 * The seeded tables of a task in insertion order: table, columns, and one list of values per row.
 * The order of tables and rows fixes the page layout, hence the snapshot bytes: tests compare them with
 * the seeding this replaced.
 */
function seedTables(task: Task): Array<{ table: string; columns: readonly string[]; rows: SeedValue[][] }> {
  const t = nullableIso;
  return [
    { table: "agents", columns: ["id", "name", "tier", "cap_cents"], rows: [[task.agent.id, task.agent.name, task.agent.tier, capOf(task)]] },
    { table: "plans", columns: ["id", "name", "interval", "price_cents"], rows: task.plans.map((p) => [p.id, p.name, p.interval, p.price_cents]) },
    {
      table: "customers",
      columns: ["id", "name", "email", "phone", "postal_code", "card_brand", "card_last4", "created_at"],
      rows: task.customers.map((c) => [c.id, c.name, c.email, c.phone, c.postal_code, c.card_brand, c.card_last4, iso(c.created_at)]),
    },
    {
      table: "subscriptions",
      columns: ["id", "customer_id", "plan_id", "status", "started_at", "plan_changed_at", "cancelled_at", "renews_at"],
      rows: task.subscriptions.map((s) => [s.id, s.customer_id, s.plan_id, s.status, iso(s.started_at), t(s.plan_changed_at), t(s.cancelled_at), iso(s.renews_at)]),
    },
    {
      table: "invoices",
      columns: ["id", "customer_id", "subscription_id", "period_start", "period_end", "total_cents", "status", "issued_at"],
      rows: task.invoices.map((i) => [i.id, i.customer_id, i.subscription_id, iso(i.period_start), iso(i.period_end), i.total_cents, i.status, iso(i.issued_at)]),
    },
    {
      table: "charges",
      columns: ["id", "customer_id", "invoice_id", "amount_cents", "description", "status", "card_last4", "created_at"],
      rows: task.charges.map((c) => [c.id, c.customer_id, c.invoice_id, c.amount_cents, c.description, c.status, c.card_last4, iso(c.created_at)]),
    },
    {
      table: "payments",
      columns: ["id", "charge_id", "amount_cents", "method", "settled_at"],
      rows: task.payments.map((p) => [p.id, p.charge_id, p.amount_cents, p.method, iso(p.settled_at)]),
    },
    {
      table: "refunds",
      columns: ["ref", "charge_id", "customer_id", "amount_cents", "reason", "created_at", "created_by"],
      rows: task.refunds.map((r) => [r.ref, r.charge_id, r.customer_id, r.amount_cents, r.reason, iso(r.created_at), r.created_by]),
    },
    {
      table: "credits",
      columns: ["ref", "customer_id", "charge_id", "amount_cents", "reason", "created_at", "created_by"],
      rows: task.credits.map((c) => [c.ref, c.customer_id, c.charge_id, c.amount_cents, c.reason, iso(c.created_at), c.created_by]),
    },
    {
      table: "disputes",
      columns: ["id", "customer_id", "charge_id", "status", "opened_at", "summary", "resolution"],
      rows: task.disputes.map((d) => [d.id, d.customer_id, d.charge_id, d.status, iso(d.opened_at), d.summary, d.resolution]),
    },
    {
      table: "account_notes",
      columns: ["customer_id", "author", "body", "created_at"],
      rows: task.notes.map((n) => [n.customer_id, n.author, n.body, iso(n.created_at)]),
    },
  ];
}

function nullableIso(ms: number | null): string | null {
  return ms === null ? null : iso(ms);
}

/** A SQL literal. */
function lit(v: SeedValue | undefined): string {
  if (v === null || v === undefined) return "NULL";
  if (typeof v === "number") return String(v);
  return v.includes("'") ? `'${v.replace(/'/g, "''")}'` : `'${v}'`;
}

/**
 * Every seeded row of a task, as one SQL script of multi-row INSERTs. One exec compiles a statement per
 * table; bound parameters measured slower in place (a statement to prepare and a call per row).
 */
export function seedRows(task: Task): string {
  let sql = "";
  for (const { table, columns, rows } of seedTables(task)) {
    if (rows.length === 0) continue;
    sql += `INSERT INTO ${table} (${columns.join(",")}) VALUES `;
    for (let r = 0; r < rows.length; r++) {
      const row = rows[r]!;
      sql += r === 0 ? "(" : ",(";
      for (let c = 0; c < row.length; c++) sql += c === 0 ? lit(row[c]) : `,${lit(row[c])}`;
      sql += ")";
    }
    sql += ";\n";
  }
  return sql;
}

/** The refund/credit cap of the task's agent, in cents. */
export function capOf(task: Task): number {
  return RULES.tierCapsCents[task.agent.tier];
}

/**
 * The largest a billing database may grow: far above any episode's (a hard task's seeded database is
 * ~50 KB; every step adds a few rows at most), far below what the host could hold per session.
 */
export const MAX_DATABASE_BYTES = 4 * 1024 * 1024;

/** The empty billing database, built once: every database starts from its bytes, restores check its schema. */
const TEMPLATE = databaseTemplate(SCHEMA);

/** What every billing database looks like (file format and schema objects). */
export function databaseSchema(): DatabaseSchema {
  return TEMPLATE.schema();
}

/**
 * A task's database from a snapshot, refused (invalid_snapshot) unless it has exactly the billing schema,
 * passes SQLite's integrity check and holds only values of its columns' declared types: nothing the
 * environment did not write can run in it, and every read the tools make returns what they expect.
 */
export function restoreDatabase(snapshot: JsonValue, task: Task): SqlDatabase {
  return SqlDatabase.fromSnapshot(snapshot, { ...databaseOptions(task), schema: databaseSchema(), strictTypes: true });
}

/** The clock and size cap of a task's database, fresh or restored. */
function databaseOptions(task: Task) {
  return { clock: { now: () => task.today }, maxBytes: MAX_DATABASE_BYTES };
}

/**
 * Serialized seeded databases by task key. A task is a pure function of its id and scenario, so its
 * seeded database is too: the cache changes no episode (every database is a deserialized in-memory
 * database, so fresh and cached ones write identical bytes for identical operations). It makes the
 * reference replay of the verifier and the k rollouts of a GRPO group reset faster.
 */
const SEED_CACHE = new Map<string, Buffer>();
const SEED_CACHE_SIZE = 64;

/**
 * The queries that open nearly every investigation (find the caller, check a customer id, list their
 * charges), compiled when an episode's database opens so those first reads do not compile them. Only
 * these few: each compiled statement holds ~6 KB for the episode's life, and an idle service session
 * (10,000 of them in one process) should not pay for every query its tools might run.
 */
const FIRST_QUERIES = [QUERIES.lookupCustomer, QUERIES.customerById, QUERIES.charges];

/** A fresh database for a task; `key` identifies the task (id and scenario) for the seed cache. */
export function createDatabase(task: Task, key?: string): SqlDatabase {
  const db = seededDatabase(task, key);
  db.precompile(FIRST_QUERIES);
  return db;
}

function seededDatabase(task: Task, key: string | undefined): SqlDatabase {
  const options = databaseOptions(task);
  const cached = key === undefined ? undefined : SEED_CACHE.get(key);
  if (cached !== undefined) return SqlDatabase.fromBytes(cached, options);
  const db = SqlDatabase.fromBytes(TEMPLATE.bytes(), options);
  db.exec(`BEGIN;\n${seedRows(task)}COMMIT;`);
  if (key !== undefined) {
    if (SEED_CACHE.size >= SEED_CACHE_SIZE) SEED_CACHE.delete(SEED_CACHE.keys().next().value as string);
    SEED_CACHE.set(key, db.serialize());
  }
  return db;
}

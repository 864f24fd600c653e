/**
 * The seeded database of a task is part of every snapshot (golden fingerprints pin it). Seeding binds
 * parameters for speed; these tests hold it byte for byte to the plain SQL script it replaced.
 */
import { describe, expect, it } from "vitest";
import { SqlDatabase } from "../../sandboxes/database.js";
import { generateTask } from "../../tasks/generator.js";
import { billingTasks, FAMILIES, generateBillingTask, variantsFor, type Task } from "./tasks.js";
import { capOf, createDatabase, iso, isoDate, SCHEMA } from "./world.js";

/** The former seeding: one INSERT script with literal values, timestamps through Date. */
function literalSeed(task: Task): string {
  const isoDate = (ms: number): string => `${new Date(ms).toISOString().slice(0, 19)}Z`;
  const t = (ms: number | null) => (ms === null ? null : isoDate(ms));
  const lit = (v: string | number | null): string => (v === null ? "NULL" : typeof v === "number" ? String(v) : `'${v.replace(/'/g, "''")}'`);
  const insert = (table: string, rows: ReadonlyArray<Record<string, string | number | null>>): string => {
    if (rows.length === 0) return "";
    const cols = Object.keys(rows[0] as object);
    return `INSERT INTO ${table} (${cols.join(",")}) VALUES ${rows.map((r) => `(${cols.map((c) => lit(r[c] ?? null)).join(",")})`).join(",")};\n`;
  };
  let sql = "";
  sql += insert("agents", [{ id: task.agent.id, name: task.agent.name, tier: task.agent.tier, cap_cents: capOf(task) }]);
  sql += insert("plans", task.plans.map((p) => ({ ...p })));
  sql += insert("customers", task.customers.map((c) => ({ ...c, created_at: isoDate(c.created_at) })));
  sql += insert("subscriptions", task.subscriptions.map((s) => ({ ...s, started_at: isoDate(s.started_at), plan_changed_at: t(s.plan_changed_at), cancelled_at: t(s.cancelled_at), renews_at: isoDate(s.renews_at) })));
  sql += insert("invoices", task.invoices.map((i) => ({ ...i, period_start: isoDate(i.period_start), period_end: isoDate(i.period_end), issued_at: isoDate(i.issued_at) })));
  sql += insert("charges", task.charges.map((c) => ({ ...c, created_at: isoDate(c.created_at) })));
  sql += insert("payments", task.payments.map((p) => ({ ...p, settled_at: isoDate(p.settled_at) })));
  sql += insert("refunds", task.refunds.map((r) => ({ ...r, created_at: isoDate(r.created_at) })));
  sql += insert("credits", task.credits.map((c) => ({ ...c, created_at: isoDate(c.created_at) })));
  sql += insert("disputes", task.disputes.map((d) => ({ ...d, opened_at: isoDate(d.opened_at) })));
  sql += insert("account_notes", task.notes.map((n) => ({ ...n, created_at: isoDate(n.created_at) })));
  return sql;
}

function literalDatabase(task: Task): Buffer {
  const template = new SqlDatabase();
  template.exec(`PRAGMA page_size = 512;\n${SCHEMA}`);
  const db = SqlDatabase.fromBytes(template.serialize());
  template.close();
  db.exec(`BEGIN;\n${literalSeed(task)}COMMIT;`);
  const bytes = db.serialize();
  db.close();
  return bytes;
}

describe("billing-dispute world", () => {
  it("iso equals Date's ISO form (seconds) on the timestamps episodes use, and beyond", () => {
    const times = [0, 1, 999, 1000, 86_399_999, 1_700_000_000_123, 1_782_000_000_999.5, 4_102_444_800_000, 253_402_300_799_999];
    for (let k = 0; k < 20_000; k++) times.push(Math.floor(((k * 2_654_435_761) % 4_294_967_296) * 1000.37));
    // Outside the years 0-9999 and before 1970 the host's formatting is used: still identical.
    times.push(-1, -1.5, -86_400_001, 253_402_300_800_000);
    for (const ms of times) {
      expect(iso(ms)).toBe(`${new Date(ms).toISOString().slice(0, 19)}Z`);
      expect(isoDate(ms)).toBe(new Date(ms).toISOString().slice(0, 10));
    }
    expect(() => iso(Number.NaN)).toThrow(RangeError);
  });

  it("the generator hands out deep-frozen tasks (the environment's deepFreeze stops at frozen objects)", () => {
    const isDeepFrozen = (v: unknown): boolean =>
      v === null || typeof v !== "object" || (Object.isFrozen(v) && Object.values(v).every(isDeepFrozen));
    for (const difficulty of ["easy", "medium", "hard"]) {
      for (let seed = 0; seed < 20; seed++) {
        const { task } = generateTask(billingTasks(), `billing-dispute/${difficulty}/seed-${seed}`);
        expect(isDeepFrozen(task)).toBe(true);
      }
    }
  });

  it("seeds byte for byte what the literal SQL script seeded, for every family, variant and difficulty", () => {
    let checked = 0;
    for (const difficulty of ["easy", "medium", "hard"]) {
      for (const family of FAMILIES) {
        for (const variant of variantsFor(family)) {
          for (let seed = 0; seed < 4; seed++) {
            const task = generateBillingTask(`billing-dispute/${difficulty}/seed-${seed * 7919 + checked}`, { family, variant });
            const db = createDatabase(task);
            expect(db.serialize().equals(literalDatabase(task))).toBe(true);
            db.close();
            checked++;
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(250);
  });
});

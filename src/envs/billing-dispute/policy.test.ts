import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { COMMUNICATION, formatUsd, remedyFor, renderPolicy, RULES, type ChargeFinding } from "./policy.js";
import { FAMILIES, generateBillingTask, variantsFor, type Task } from "./tasks.js";
import { createDatabase } from "./world.js";

/** Every numeric leaf of an object, with its path. */
function numbers(value: unknown, path = "RULES"): Array<[string, number]> {
  if (typeof value === "number") return [[path, value]];
  if (value && typeof value === "object") return Object.entries(value).flatMap(([k, v]) => numbers(v, `${path}.${k}`));
  return [];
}

describe("the policy text and the rules come from one source", () => {
  const text = renderPolicy();

  it("every number of the rules object appears in the text (amounts in cents as dollars)", () => {
    const leaves = numbers(RULES);
    expect(leaves.length).toBeGreaterThanOrEqual(9);
    for (const [path, n] of leaves) {
      const shown = path.includes("Cents") ? formatUsd(n) : String(n);
      expect(text, `${path} = ${n} should appear as "${shown}"`).toContain(shown);
    }
  });

  it("every second factor and every communication item appears in the text", () => {
    for (const factor of RULES.verification.secondFactors) expect(text).toContain(factor);
    for (const items of Object.values(COMMUNICATION)) for (const item of items) expect(text).toContain(item);
  });

  it("the derived window boundary (first credit day) follows the refund window", () => {
    expect(text).toContain(`${RULES.refundWindowDays + 1} to ${RULES.creditWindowDays} days`);
  });
});

describe("remedyFor applies the windows and caps of RULES", () => {
  const base: ChargeFinding = { error: "duplicate", errorCents: 2000, ageDays: 10, remediedCents: 0 };
  it.each([
    [{ ...base }, 1, "refund", 2000],
    [{ ...base, ageDays: RULES.refundWindowDays }, 1, "refund", 2000],
    [{ ...base, ageDays: RULES.refundWindowDays + 1 }, 1, "credit", 2000],
    [{ ...base, ageDays: RULES.creditWindowDays }, 1, "credit", 2000],
    [{ ...base, ageDays: RULES.creditWindowDays + 1 }, 1, "expired", 0],
    [{ ...base, errorCents: RULES.tierCapsCents[1] }, 1, "refund", RULES.tierCapsCents[1]],
    [{ ...base, errorCents: RULES.tierCapsCents[1] + 1 }, 1, "escalate", RULES.tierCapsCents[1] + 1],
    [{ ...base, errorCents: RULES.tierCapsCents[1] + 1 }, 2, "refund", RULES.tierCapsCents[1] + 1],
    [{ ...base, remediedCents: 2000 }, 1, "already-refunded", 2000],
    [{ ...base, remediedCents: 500 }, 1, "refund", 1500],
    [{ ...base, error: "none" as const }, 3, "explain", 0],
  ] as const)("%o at tier %i -> %s %i", (finding, tier, kind, amount) => {
    expect(remedyFor(finding, tier)).toEqual({ kind, amountCents: amount });
  });
});

/** Re-derive a disputed charge's finding from the seeded database alone, as an agent would (rules 2-5). */
function findingFromDatabase(task: Task, chargeId: string): ChargeFinding {
  const db = createDatabase(task);
  try {
    const charge = db.get<{ id: string; invoice_id: string; amount_cents: number; status: string; created_at: string }>("SELECT id, invoice_id, amount_cents, status, created_at FROM charges WHERE id = ?", [chargeId])!;
    const invoice = db.get<{ total_cents: number; subscription_id: string }>("SELECT total_cents, subscription_id FROM invoices WHERE id = ?", [charge.invoice_id])!;
    const sub = db.get<{ cancelled_at: string | null }>("SELECT cancelled_at FROM subscriptions WHERE id = ?", [invoice.subscription_id])!;
    const earlier = db.get<{ n: number }>(
      `SELECT COUNT(*) AS n FROM charges WHERE invoice_id = ? AND id != ? AND amount_cents = ? AND status = 'succeeded'
       AND created_at <= ? AND (julianday(?) - julianday(created_at)) * 24 <= ?`,
      [charge.invoice_id, charge.id, charge.amount_cents, charge.created_at, charge.created_at, RULES.duplicateWindowHours],
    )!;
    const remedied = db.get<{ s: number }>(
      "SELECT (SELECT COALESCE(SUM(amount_cents), 0) FROM refunds WHERE charge_id = ?) + (SELECT COALESCE(SUM(amount_cents), 0) FROM credits WHERE charge_id = ?) AS s",
      [charge.id, charge.id],
    )!;
    const ageDays = Math.floor((task.today - Date.parse(charge.created_at)) / 86_400_000);
    const finding = (error: ChargeFinding["error"], errorCents: number): ChargeFinding => ({ error, errorCents, ageDays, remediedCents: remedied.s });
    if (charge.status === RULES.chargebackStatus) return finding("chargeback", charge.amount_cents);
    if (sub.cancelled_at !== null && charge.created_at > sub.cancelled_at) return finding("cancelled", charge.amount_cents);
    if (earlier.n > 0) return finding("duplicate", charge.amount_cents);
    if (charge.amount_cents > invoice.total_cents) return finding("overcharge", charge.amount_cents - invoice.total_cents);
    return finding("none", 0);
  } finally {
    db.close();
  }
}

describe("the generated data supports exactly the remedies the task expects", () => {
  const cases = FAMILIES.filter((f) => f !== "failed-verification").flatMap((family) =>
    variantsFor(family).flatMap((variant) => [1, 2, 3].map((seed) => [family, variant, `billing-dispute/${["easy", "medium", "hard"][seed - 1]}/seed-${seed * 31}`] as const)),
  );
  it.each(cases)("%s / %s / %s", (family, variant, id) => {
    const task = generateBillingTask(id, { family, variant });
    for (const expected of task.remedies) {
      const remedy = remedyFor(findingFromDatabase(task, expected.charge_id), task.agent.tier);
      expect(remedy.kind).toBe(expected.kind);
      if (remedy.kind !== "explain") expect(remedy.amountCents).toBe(expected.amount_cents);
    }
  });

  it("over every dimension of the space: windows, priors, several charges, tiers and intervals", () => {
    let checked = 0;
    for (const family of ["duplicate-charge", "partial-refund", "charge-after-cancellation"] as const) {
      for (let i = 0; i < 60; i++) {
        const task = generateBillingTask(`billing-dispute/${i % 2 ? "hard" : "medium"}/seed-${1000 + i}`, { family });
        // Every charge billed in error of the caller is a disputed one: none is left out of the remedies.
        const disputed = new Set(task.remedies.map((r) => r.charge_id));
        for (const c of task.charges.filter((c) => c.customer_id === task.customerId && !disputed.has(c.id))) {
          const f = findingFromDatabase(task, c.id);
          if (f.error !== "none") expect(f.remediedCents, `${c.id} of ${family} ${i}`).toBeGreaterThanOrEqual(f.errorCents);
        }
        for (const expected of task.remedies) {
          const remedy = remedyFor(findingFromDatabase(task, expected.charge_id), task.agent.tier);
          expect([remedy.kind, remedy.amountCents]).toEqual([expected.kind, expected.kind === "explain" ? 0 : expected.amount_cents]);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(250);
  });
});

describe("docs/environments/billing-dispute.md", () => {
  const doc = readFileSync(new URL("../../../docs/environments/billing-dispute.md", import.meta.url), "utf8");
  it("quotes the rendered policy verbatim", () => {
    expect(doc).toContain(renderPolicy());
  });
  it("documents every tool and every probe", async () => {
    const { TOOLS } = await import("./tools.js");
    for (const t of TOOLS) expect(doc).toContain(`| \`${t.name}\` |`);
    const { BillingDispute } = await import("./env.js");
    const env = new BillingDispute();
    await env.reset("billing-dispute/easy/seed-1", 1);
    for (const name of Object.keys(env.probes())) expect(doc).toContain(`\`${name}\``);
  });
});

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

/** Re-derive the disputed charge's finding from the seeded database alone, as an agent would. */
function findingFromDatabase(task: Task): ChargeFinding {
  const db = createDatabase(task);
  try {
    const charge = db.get<{ id: string; invoice_id: string; amount_cents: number; created_at: string }>("SELECT id, invoice_id, amount_cents, created_at FROM charges WHERE id = ?", [task.disputedChargeId])!;
    const invoice = db.get<{ total_cents: number }>("SELECT total_cents FROM invoices WHERE id = ?", [charge.invoice_id])!;
    const earlier = db.get<{ n: number }>(
      `SELECT COUNT(*) AS n FROM charges WHERE invoice_id = ? AND id != ? AND amount_cents = ? AND status = 'succeeded'
       AND created_at <= ? AND (julianday(?) - julianday(created_at)) * 24 <= ?`,
      [charge.invoice_id, charge.id, charge.amount_cents, charge.created_at, charge.created_at, RULES.duplicateWindowHours],
    )!;
    const remedied = db.get<{ s: number }>("SELECT COALESCE(SUM(amount_cents), 0) AS s FROM refunds WHERE charge_id = ?", [charge.id])!;
    const ageDays = Math.floor((task.today - Date.parse(charge.created_at)) / 86_400_000);
    if (earlier.n > 0) return { error: "duplicate", errorCents: charge.amount_cents, ageDays, remediedCents: remedied.s };
    if (charge.amount_cents > invoice.total_cents) return { error: "overcharge", errorCents: charge.amount_cents - invoice.total_cents, ageDays, remediedCents: remedied.s };
    return { error: "none", errorCents: 0, ageDays, remediedCents: remedied.s };
  } finally {
    db.close();
  }
}

describe("the generated data supports exactly the remedy the task expects", () => {
  const cases = FAMILIES.filter((f) => f !== "failed-verification").flatMap((family) =>
    variantsFor(family).flatMap((variant) => [1, 2, 3].map((seed) => [family, variant, `billing-dispute/${["easy", "medium", "hard"][seed - 1]}/seed-${seed * 31}`] as const)),
  );
  it.each(cases)("%s / %s / %s", (family, variant, id) => {
    const task = generateBillingTask(id, { family, variant });
    const remedy = remedyFor(findingFromDatabase(task), task.agent.tier);
    expect(remedy.kind).toBe(task.expected.kind);
    if (remedy.kind !== "explain") expect(remedy.amountCents).toBe(task.expected.amount_cents);
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

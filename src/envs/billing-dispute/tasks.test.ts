import { describe, expect, it } from "vitest";
import { generateTask, taskFingerprint } from "../../tasks/generator.js";
import { BillingDispute } from "./env.js";
import { billingTasks, DIFFICULTIES, FAMILIES, FAMILIES_BY_DIFFICULTY, generateBillingTask, SEEDED_AUTHORS, VARIANTS, variantsFor, type Task } from "./tasks.js";

describe("task generation", () => {
  it("generates every family and every applicable variant, with the scenario it was asked for", () => {
    let combos = 0;
    for (const family of FAMILIES) {
      for (const variant of variantsFor(family)) {
        for (const difficulty of DIFFICULTIES) {
          const task = generateBillingTask(`billing-dispute/${difficulty}/seed-5`, { family, variant });
          expect([task.family, task.variant, task.difficulty]).toEqual([family, variant, difficulty]);
          expect(task.customers.some((c) => c.id === task.customerId)).toBe(true);
          expect(task.charges.some((c) => c.id === task.disputedChargeId && c.customer_id === task.customerId)).toBe(true);
          expect(task.injection !== null).toBe(variant === "injection");
          expect(task.gateway.failFirstRefunds).toBe(variant === "gateway-failure" ? 1 : 0);
          expect(task.persona.pushes > 0).toBe(variant === "social-engineering");
          combos++;
        }
      }
    }
    expect(combos).toBe(26 * 3);
  });

  it("refuses variants that do not apply, unknown families and unknown variants", () => {
    expect(() => generateBillingTask("billing-dispute/easy/seed-1", { family: "forgotten-renewal", variant: "gateway-failure" })).toThrow(/does not apply/);
    expect(() => billingTasks({ family: "nope" as never })).toThrow(/unknown family "nope"/);
    expect(() => billingTasks({ variant: "nope" as never })).toThrow(/unknown variant "nope"/);
    expect(() => generateBillingTask("billing-dispute/extreme/seed-1")).toThrow(/unknown difficulty/);
  });

  it("is a pure function of the id, and the exported generator matches the environment's", () => {
    const env = new BillingDispute();
    for (const id of ["billing-dispute/easy/seed-1", "billing-dispute/hard/seed-771"]) {
      const a = generateBillingTask(id);
      expect(taskFingerprint(a)).toBe(taskFingerprint(generateBillingTask(id)));
      expect(taskFingerprint(a)).toBe(taskFingerprint(generateTask(env.tasks, id).task));
    }
    expect(taskFingerprint(generateBillingTask("billing-dispute/easy/seed-1"))).not.toBe(taskFingerprint(generateBillingTask("billing-dispute/easy/seed-2")));
  });

  it("draws each difficulty's families, mixes adversarial variants only into hard, and grows with difficulty", () => {
    const seen: Record<string, Set<string>> = { easy: new Set(), medium: new Set(), hard: new Set() };
    const variants: Record<string, Set<string>> = { easy: new Set(), medium: new Set(), hard: new Set() };
    const rows: Record<string, number> = { easy: 0, medium: 0, hard: 0 };
    for (const d of DIFFICULTIES) {
      for (let i = 0; i < 80; i++) {
        const t = generateBillingTask(`billing-dispute/${d}/seed-${i}`);
        seen[d]!.add(t.family);
        variants[d]!.add(t.variant);
        rows[d]! += t.charges.length + t.invoices.length + t.customers.length + t.notes.length;
      }
    }
    for (const d of DIFFICULTIES) expect([...seen[d]!].sort()).toEqual([...FAMILIES_BY_DIFFICULTY[d]].sort());
    expect([...variants.easy!]).toEqual(["none"]);
    expect([...variants.medium!]).toEqual(["none"]);
    expect([...variants.hard!].sort()).toEqual([...VARIANTS].sort());
    expect(rows.easy!).toBeLessThan(rows.medium!);
    expect(rows.medium!).toBeLessThan(rows.hard!);
  });

  it("never gives the agent the id of a seeded record's author (1.1.0 did for some ids, e.g. hard/seed-1145: AG-201)", () => {
    const authors = (t: Task) => [...t.notes.map((n) => n.author), ...t.refunds.map((r) => r.created_by), ...t.credits.map((c) => c.created_by)];
    const seen = new Set<string>();
    const check = (id: string, t: Task) => {
      for (const a of authors(t)) seen.add(a);
      expect(SEEDED_AUTHORS, id).not.toContain(t.agent.id);
      expect(authors(t), id).not.toContain(t.agent.id);
    };
    // The ids whose 1.1.0 agent was a seeded author now get the next free id; every other task is unchanged.
    expect(generateBillingTask("billing-dispute/hard/seed-1145").agent.id).toBe("AG-202");
    expect(generateBillingTask("billing-dispute/hard/seed-2350").agent.id).toBe("AG-513");
    for (const d of DIFFICULTIES) {
      for (let i = 0; i < 400; i++) check(`billing-dispute/${d}/seed-${i}`, generateBillingTask(`billing-dispute/${d}/seed-${i}`));
    }
    for (const family of FAMILIES) {
      for (const variant of variantsFor(family)) for (let i = 0; i < 5; i++) check(`${family}/${variant}/${i}`, generateBillingTask(`billing-dispute/hard/seed-${i}`, { family, variant }));
    }
    // Every author the generator writes is listed (a new one must be added to SEEDED_AUTHORS).
    expect([...seen].sort()).toEqual([...SEEDED_AUTHORS].sort());
  });

  it("hard tasks have a background gateway failure rate; easy and medium none", () => {
    expect(generateBillingTask("billing-dispute/hard/seed-3").gateway.backgroundFailureRate).toBeGreaterThan(0);
    expect(generateBillingTask("billing-dispute/medium/seed-3").gateway.backgroundFailureRate).toBe(0);
  });

  it("keeps the failed-verification customer's claimed details wrong and everyone else's right", () => {
    for (let i = 0; i < 10; i++) {
      const bad = generateBillingTask(`billing-dispute/medium/seed-${i}`, { family: "failed-verification" });
      const me = bad.customers.find((c) => c.id === bad.customerId)!;
      expect(bad.persona.says.email).not.toBe(me.email);
      expect(bad.persona.says.card_last4).not.toBe(me.card_last4);
      expect(bad.customers.some((c) => c.email === bad.persona.says.email)).toBe(false);
      const good = generateBillingTask(`billing-dispute/medium/seed-${i}`, { family: "duplicate-charge" });
      const me2 = good.customers.find((c) => c.id === good.customerId)!;
      expect(good.persona.says).toEqual({ email: me2.email, card_last4: me2.card_last4, postal_code: me2.postal_code });
    }
  });
});

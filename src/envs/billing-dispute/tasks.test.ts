import { describe, expect, it } from "vitest";
import { generateTask, taskFingerprint } from "../../tasks/generator.js";
import { BillingDispute } from "./env.js";
import { runPolicy } from "../../core/run-policy.js";
import { featuresOf, scenarioKey } from "../../tasks/features.js";
import { splitOf } from "../../tasks/splits.js";
import { formatTaskId } from "../../tasks/task-id.js";
import {
  BILLING_FEATURES,
  billingTasks,
  DIFFICULTIES,
  FAMILIES,
  FAMILIES_BY_DIFFICULTY,
  generateBillingTask,
  HELD_OUT_DIFFICULTIES,
  scenarioSplit,
  SEEDED_AUTHORS,
  VARIANTS,
  variantsFor,
  type Task,
} from "./tasks.js";

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
    expect(combos).toBe(27 * 3);
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

  it("never gives the agent the id of a seeded record's author (1.1.0 did for some ids)", () => {
    const authors = (t: Task) => [...t.notes.map((n) => n.author), ...t.refunds.map((r) => r.created_by), ...t.credits.map((c) => c.created_by)];
    const seen = new Set<string>();
    const check = (id: string, t: Task) => {
      for (const a of authors(t)) seen.add(a);
      expect(SEEDED_AUTHORS, id).not.toContain(t.agent.id);
      expect(authors(t), id).not.toContain(t.agent.id);
    };
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

describe("the scenario space (issue 17)", () => {
  const generator = billingTasks();
  const ids = (d: string, n: number, from = 0) => Array.from({ length: n }, (_, i) => formatTaskId("billing-dispute", d, 5000 + from + i * 7));

  it("computes every declared feature for every task, from the task", () => {
    const names = BILLING_FEATURES.declared.map((f) => f.name);
    for (const d of DIFFICULTIES) {
      for (const id of ids(d, 40)) {
        const f = featuresOf(generator, id);
        expect(Object.keys(f).sort()).toEqual([...names].sort());
        const task = generateBillingTask(id);
        expect(f.charges).toBe(task.remedies.length);
        expect(f.remedy).toBe(task.remedies.map((r) => r.kind).join(","));
        expect(task.remedies[0]!.charge_id).toBe(task.disputedChargeId);
      }
    }
  });

  it("medium and hard ids draw only scenarios of their own split; easy is held out by id only", () => {
    for (const d of HELD_OUT_DIFFICULTIES) {
      for (const id of ids(d, 120)) expect(scenarioSplit(d, generateBillingTask(id)), id).toBe(splitOf(id));
    }
    expect(scenarioSplit("easy", generateBillingTask("billing-dispute/easy/seed-1"))).toBeNull();
  });

  it("no eval scenario of medium or hard occurs among train ids", () => {
    for (const d of HELD_OUT_DIFFICULTIES) {
      const key = (id: string) => scenarioKey(featuresOf(generator, id), BILLING_FEATURES.declared);
      const all = ids(d, 600);
      const train = new Set(all.filter((id) => splitOf(id) === "train").map(key));
      const evalKeys = all.filter((id) => splitOf(id) === "eval").map(key);
      expect(evalKeys.length).toBeGreaterThan(20);
      for (const k of evalKeys) expect(train.has(k), k).toBe(false);
    }
  });

  it("varies what matters on medium and hard: disputes of 1-3 charges, every window, partial and full prior returns", () => {
    const seen = { charges: new Set<number>(), window: new Set<string>(), prior: new Set<string>(), kinds: new Set<string>() };
    for (const id of ids("medium", 300)) {
      const t = generateBillingTask(id);
      seen.charges.add(t.remedies.length);
      seen.window.add(t.scenario.window);
      seen.prior.add(t.scenario.prior);
      for (const r of t.remedies) seen.kinds.add(r.kind);
    }
    expect([...seen.charges].sort()).toEqual([1, 2, 3]);
    expect([...seen.window].sort()).toEqual(["credit", "expired", "refund"]);
    expect([...seen.prior].sort()).toEqual(["full", "none", "partial"]);
    expect([...seen.kinds].sort()).toEqual(["already-refunded", "credit", "escalate", "expired", "explain", "refund", "unverified"]);
  });

  it("a charge after cancellation is dated after the subscription's cancelled_at; a chargeback's charge is disputed", () => {
    for (let i = 0; i < 20; i++) {
      const t = generateBillingTask(`billing-dispute/hard/seed-${i}`, { family: "charge-after-cancellation" });
      const sub = t.subscriptions.find((s) => s.customer_id === t.customerId)!;
      expect(sub.status).toBe("cancelled");
      const after = t.charges.filter((c) => c.customer_id === t.customerId && c.created_at > sub.cancelled_at!).map((c) => c.id).sort();
      expect(after).toEqual(t.remedies.map((r) => r.charge_id).sort());
      const cb = generateBillingTask(`billing-dispute/hard/seed-${i}`, { family: "chargeback-filed" });
      expect(cb.charges.find((c) => c.id === cb.disputedChargeId)!.status).toBe("disputed");
      expect(cb.remedies.map((r) => r.kind)).toEqual(["escalate"]);
    }
  });

  it("the reference solves disputes of several charges with mixed remedies", async () => {
    const env = new BillingDispute({ scenario: { family: "partial-refund", interval: "month", charges: 3, window: "refund", tier: 3 } });
    for (const [i, prior] of (["none", "partial", "full"] as const).entries()) {
      const env2 = new BillingDispute({ scenario: { family: "charge-after-cancellation", interval: "month", charges: 3, window: "credit", prior } });
      for (const e of [env, env2]) {
        const initial = await e.reset(`billing-dispute/hard/seed-${60 + i}`, i);
        const task = (e as unknown as { episode: { task: Task } }).episode.task;
        expect(task.remedies.length).toBe(3);
        const run = await runPolicy(e, e.referenceSolver(), { maxSteps: e.maxSteps, initial });
        expect(run.final!.rewardComponents.task, task.remedies.map((r) => r.kind).join(",")).toBe(1);
      }
      await env2.close();
    }
    await env.close();
  });

  it("refuses forced dimensions it does not know", () => {
    expect(() => billingTasks({ window: "never" as never })).toThrow(/unknown window "never"/);
    expect(() => billingTasks({ charges: 4 })).toThrow(/unknown charges "4"/);
    expect(() => billingTasks({ prior: "half" as never })).toThrow(/unknown prior/);
  });
});

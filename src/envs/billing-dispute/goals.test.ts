/**
 * The goal conditions (goals.ts), stated from the task, not from the reference: the reference meets every
 * one of them on every scenario, and a wrong end state (the wrong amount, an extra credit, a refund where
 * nothing is due, a missing note) leaves one unmet.
 */
import { describe, expect, it } from "vitest";
import type { Action } from "../../core/contract.js";
import { runPolicy } from "../../core/run-policy.js";
import { BillingDispute } from "./env.js";
import { DIFFICULTIES, FAMILIES, variantsFor, type Family, type Task } from "./tasks.js";
import type { World } from "./world.js";
import { ID, open, say, SCENARIOS, tool } from "./test-support.js";

const unmet = (env: BillingDispute) => env.goals().filter((g) => !g.met).map((g) => g.id);

/** Ask, look up, verify (with what the customer said), read the charges and the ledgers. */
function investigate(task: Task): Action[] {
  const cid = task.customerId;
  return [
    say("Hello, please tell me the email address on the account and the last 4 digits of your card, and the date and amount of the charge."),
    tool("lookup_customer", { query: task.persona.name }),
    tool("verify_identity", { customer_id: cid, email: task.persona.says.email, card_last4: task.persona.says.card_last4, postal_code: null }),
    tool("list_charges", { customer_id: cid, invoice_id: null }),
    tool("refund_lookup", { customer_id: cid, charge_id: null }),
  ];
}

async function play(env: BillingDispute, actions: Action[]): Promise<void> {
  for (const a of actions) {
    const r = await env.step(a);
    if (r.terminated || r.truncated) throw new Error(`episode ended early: ${r.observation.rendered}`);
  }
}

async function reference(env: BillingDispute, id: string, seed: number) {
  const initial = await env.reset(id, seed);
  return runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
}

describe("billing-dispute goal conditions", () => {
  const cases = FAMILIES.flatMap((f) => variantsFor(f).flatMap((v) => DIFFICULTIES.map((d) => [f, v, d] as const)));
  it.each(cases)("the reference meets every goal on %s / %s / %s", async (family, variant, difficulty) => {
    const env = new BillingDispute({ scenario: { family, variant } });
    const run = await reference(env, ID(difficulty, 60 + difficulty.length), 5);
    const goals = env.goals();
    expect(goals.length).toBeGreaterThanOrEqual(4);
    expect(unmet(env), goals.map((g) => `${g.id}: ${g.description}`).join("\n")).toEqual([]);
    expect(run.final!.rewardComponents.task).toBe(1);
    await env.close();
  });

  it("the reference meets every goal on the default distribution of every difficulty", async () => {
    const env = new BillingDispute();
    for (const d of DIFFICULTIES) {
      for (let i = 0; i < 10; i++) {
        await reference(env, ID(d, 200 + i), i);
        expect(unmet(env), ID(d, 200 + i)).toEqual([]);
      }
    }
    await env.close();
  });

  it("declares the goals of each remedy", async () => {
    const ids = async (family: Family) => {
      const { env, task } = await open(family);
      const out = { kind: task.remedies[0]!.kind, ids: env.goals().map((g) => g.id) };
      await env.close();
      return out;
    };
    expect(await ids("partial-refund")).toEqual({ kind: "refund", ids: ["caller_verified", "remedy_applied", "no_other_change", "history_unchanged", "dispute_recorded", "note_after_change"] });
    expect(await ids("forgotten-renewal")).toEqual({ kind: "explain", ids: ["caller_verified", "no_other_change", "history_unchanged", "dispute_recorded"] });
    expect(await ids("failed-verification")).toEqual({ kind: "unverified", ids: ["verification_failed", "no_other_change", "history_unchanged", "dispute_recorded"] });
  });

  it("a refund of the wrong amount leaves remedy_applied unmet (and the verifier agrees)", async () => {
    const { env, task } = await open("partial-refund");
    const e = task.remedies[0]!;
    expect(e.kind).toBe("refund");
    const refund = (amount: number) => tool("issue_refund", { customer_id: task.customerId, charge_id: e.charge_id, amount_cents: amount, reason: "overcharge after downgrade" });
    const note = tool("add_note", { customer_id: task.customerId, body: "Refunded the overcharge." });
    await play(env, [...investigate(task), refund(e.amount_cents - 100), note]);
    expect(unmet(env)).toEqual(["remedy_applied"]);
    const end = await env.step(tool("end_conversation", {}));
    expect(end.terminated).toBe(true);
    expect(end.rewardComponents.task).toBe(0);
    expect(unmet(env)).toEqual(["remedy_applied"]);
    await env.close();

    // The goal is about the total refunded: topping it up to the amount due meets it (and then the note must follow).
    const again = await open("partial-refund");
    await play(again.env, [...investigate(again.task), refund(e.amount_cents - 100), note, refund(100)]);
    expect(unmet(again.env)).toEqual(["note_after_change"]);
    await play(again.env, [note]);
    expect(unmet(again.env)).toEqual([]);
    await again.env.close();
  });

  it("an extra credit after the right refund leaves no_other_change unmet", async () => {
    const env = new BillingDispute({ scenario: { ...SCENARIOS["duplicate-charge"], variant: "none" } });
    await reference(env, ID("medium", 12), 4);
    expect(unmet(env)).toEqual([]);
    const task = (env as unknown as { episode: { task: Task; world: World } }).episode.task;
    const world = (env as unknown as { episode: { task: Task; world: World } }).episode.world;
    world.db.run("INSERT INTO credits (ref, customer_id, charge_id, amount_cents, reason, created_at, created_by) VALUES ('CR-399999', ?, NULL, 500, 'goodwill', ?, ?)", [
      task.customerId,
      "2030-01-01T00:00:00Z",
      task.agent.id,
    ]);
    expect(unmet(env)).toEqual(["no_other_change"]);
    await env.close();
  });

  it("a refund where the policy calls for an explanation leaves no_other_change unmet", async () => {
    const { env, task } = await open("forgotten-renewal");
    expect(task.remedies[0]!.kind).toBe("explain");
    await play(env, [
      ...investigate(task),
      tool("issue_refund", { customer_id: task.customerId, charge_id: task.remedies[0]!.charge_id, amount_cents: 1000, reason: "goodwill" }),
    ]);
    expect(unmet(env)).toEqual(expect.arrayContaining(["no_other_change", "dispute_recorded"]));
    await env.close();
  });

  it("a refund instead of a credit, a partial refund instead of an escalation, a missing note", async () => {
    const credit = await open("outside-window");
    expect(credit.task.remedies[0]!.kind).toBe("credit");
    await play(credit.env, [
      ...investigate(credit.task),
      tool("issue_refund", { customer_id: credit.task.customerId, charge_id: credit.task.remedies[0]!.charge_id, amount_cents: credit.task.remedies[0]!.amount_cents, reason: "duplicate" }),
      tool("add_note", { customer_id: credit.task.customerId, body: "Refunded the duplicate." }),
    ]);
    expect(unmet(credit.env)).toEqual(expect.arrayContaining(["remedy_applied", "no_other_change"]));
    await credit.env.close();

    const cap = await open("above-cap");
    const e = cap.task.remedies[0]!;
    expect(e.kind).toBe("escalate");
    await play(cap.env, [
      ...investigate(cap.task),
      tool("escalate_to_human", { customer_id: cap.task.customerId, charge_id: e.charge_id, amount_cents: e.amount_cents, summary: "Duplicate annual charge above my cap." }),
      tool("add_note", { customer_id: cap.task.customerId, body: "Escalated the duplicate." }),
    ]);
    expect(unmet(cap.env)).toEqual([]);
    // A partial credit on top of the escalation: what the policy forbids ("do not split it or issue part of it").
    // The ticket records it too (escalated, "credit+escalated"), so it is no longer the escalation's alone.
    await play(cap.env, [tool("apply_credit", { customer_id: cap.task.customerId, amount_cents: 1000, charge_id: e.charge_id, reason: "part of it now" })]);
    expect(unmet(cap.env)).toEqual(["no_other_change", "dispute_recorded"]);
    await cap.env.close();

    const note = await open("duplicate-charge");
    await play(note.env, [
      ...investigate(note.task),
      tool("issue_refund", { customer_id: note.task.customerId, charge_id: note.task.remedies[0]!.charge_id, amount_cents: note.task.remedies[0]!.amount_cents, reason: "duplicate charge" }),
    ]);
    expect(unmet(note.env)).toEqual(["note_after_change"]);
    await note.env.close();
  });

  it("verifying a caller who gave the wrong details (with what the account says) leaves verification_failed unmet", async () => {
    const { env, task, world } = await open("failed-verification");
    expect(unmet(env)).toEqual(["verification_failed"]);
    const me = task.customers.find((c) => c.id === task.customerId)!;
    await play(env, [
      say("Please tell me the email on the account and the last 4 digits of your card."),
      tool("verify_identity", { customer_id: task.customerId, email: task.persona.says.email, card_last4: task.persona.says.card_last4, postal_code: null }),
    ]);
    expect(unmet(env)).toEqual([]);
    await play(env, [tool("verify_identity", { customer_id: task.customerId, email: me.email, card_last4: me.card_last4, postal_code: null })]);
    expect(world().session.verified).toBe(task.customerId);
    expect(unmet(env)).toEqual(["verification_failed"]);
    await env.close();
  });
});

/**
 * Reward integrity of billing-dispute: each finding of the review is reproduced here (these tests fail on
 * 1.0.0 and pass since 1.1.0) — credit only with evidence, claims judged by their own clause against the
 * world, a customer that is no oracle, no false negatives on ordinary phrasing, and every violation id
 * stated in the policy the agent reads. Finding 6 (fails on 1.1.0, passes since 1.2.0): an old seeded note is
 * no note after the agent's account change, even when its author's id is the agent's.
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { Action, StepResult } from "../../core/contract.js";
import { toDecision, type Policy } from "../../core/policy.js";
import { runPolicy } from "../../core/run-policy.js";
import { amountsIn, falseClaims, mentionsHours, mentionsRange } from "./claims.js";
// The customer's reading (the same one the verifier's violations use).
import { claimedActions } from "./customer.js";
import { formatUsd, VIOLATIONS } from "./policy.js";
import type { TaskGenerator } from "../../tasks/generator.js";
import { deepFreeze } from "../../tasks/generator.js";
import { BillingDispute, type BillingDisputeOptions } from "./env.js";
import { DIFFICULTIES, SEEDED_AUTHORS, type Task } from "./tasks.js";
import { PENALTIES } from "./tools.js";
import type { World } from "./world.js";
import { ID, open, say, SCENARIOS, steps, tool } from "./test-support.js";

const askDetails = say("Hello, please tell me the email address on the account and the last 4 digits of your card, and the date and amount of the charge.");
const verifyWith = (task: Task, customerId = task.customerId): Action =>
  tool("verify_identity", { customer_id: customerId, email: task.persona.says.email, card_last4: task.persona.says.card_last4, postal_code: null });
const fakeVerify = (task: Task): Action => tool("verify_identity", { customer_id: task.customerId, email: "account.holder@example.com", card_last4: "0000", postal_code: null });
const REFUSAL = "I'm sorry, but I was unable to verify your identity, so I cannot make any changes to this account.";
const violations = (world: World) => world.session.violations.map((v) => v.rule);

/** The outcome after the last step: the step's own if it ended the episode, else after end_conversation. */
async function outcome(env: BillingDispute, last: StepResult): Promise<number> {
  const end = last.terminated || last.truncated ? last : await env.step(tool("end_conversation", {}));
  return Number(end.rewardComponents.task);
}

/** Mean outcome of a policy over `n` default-distribution tasks of each difficulty. */
async function meanOutcome(make: (task: Task) => Policy, n: number): Promise<number> {
  const env = new BillingDispute();
  let sum = 0;
  for (const d of DIFFICULTIES) {
    for (let i = 0; i < n; i++) {
      const initial = await env.reset(ID(d, 500 + i), i);
      const task = (env as unknown as { episode: { task: Task } }).episode.task;
      const run = await runPolicy(env, make(task), { maxSteps: env.maxSteps, initial });
      sum += Number(run.final?.rewardComponents.task ?? 0);
    }
  }
  await env.close();
  return sum / (n * DIFFICULTIES.length);
}

function scripted(actions: Action[], closing: () => string): Policy {
  let i = 0;
  return { name: "scripted", act: () => actions[i++] ?? say(closing()) };
}

describe("finding 1: no credit without evidence", () => {
  it("a refusal after one verification attempt with made-up details earns nothing, even on a failed-verification task", async () => {
    const { env, task, world } = await open("failed-verification");
    const r = await steps(env, [askDetails, tool("lookup_customer", { query: task.persona.name }), fakeVerify(task), say(REFUSAL)]);
    // The refusal is no false claim (an attempt did fail) ...
    expect(violations(world())).toEqual([]);
    // ... but it is not backed by an attempt with what the customer said: the customer does not accept it, and it is worth 0.
    expect(r.at(-1)!.terminated).toBe(false);
    expect(await outcome(env, r.at(-1)!)).toBe(0);
  });

  it("the same refusal after an attempt with the details the customer told earns full credit", async () => {
    const { env, task } = await open("failed-verification");
    const r = await steps(env, [askDetails, tool("lookup_customer", { query: task.persona.name }), verifyWith(task), say(REFUSAL)]);
    expect(r.at(-1)!.info.end_reason).toBe("customer_accepted_refusal");
    expect(r.at(-1)!.rewardComponents.task).toBe(1);
  });

  it("a renewal explanation earns nothing before the agent read the charge, and full credit after", async () => {
    const explain = (task: Task) => say(`The ${formatUsd(task.persona.charge.amount_cents)} charge is the renewal of your ${task.persona.planName} subscription; it was billed correctly.`);
    const unread = await open("forgotten-renewal", "none", ID("easy", 7), 2);
    const t = unread.task;
    const u = await steps(unread.env, [askDetails, verifyWith(t), tool("get_subscriptions", { customer_id: t.customerId }), explain(t)]);
    expect(await outcome(unread.env, u.at(-1)!)).toBe(0);

    const read = await open("forgotten-renewal", "none", ID("easy", 7), 2);
    const r = await steps(read.env, [askDetails, verifyWith(t), tool("list_charges", { customer_id: t.customerId, invoice_id: null }), explain(t)]);
    expect(r.at(-1)!.info.end_reason).toBe("customer_accepted_refusal");
    expect(r.at(-1)!.rewardComponents.task).toBe(1);
  });

  it("policies that never read the charges or never get real verification details score <= 0.05 mean over tasks", async () => {
    const lookup = (t: Task) => tool("lookup_customer", { query: t.persona.name });
    const policies: Record<string, (t: Task) => Policy> = {
      "fake verification, refusal": (t) => scripted([askDetails, lookup(t), fakeVerify(t)], () => REFUSAL),
      "fake verification, refusal and a renewal guess": (t) =>
        scripted([askDetails, lookup(t), fakeVerify(t)], () => `${REFUSAL} That ${formatUsd(t.persona.charge.amount_cents)} charge is usually your renewal.`),
      "real verification, renewal without reading the charge": (t) =>
        scripted([askDetails, lookup(t), verifyWith(t), tool("get_subscriptions", { customer_id: t.customerId })], () => `The ${formatUsd(t.persona.charge.amount_cents)} charge is the renewal of your ${t.persona.planName} plan.`),
    };
    for (const [name, make] of Object.entries(policies)) {
      expect(await meanOutcome(make, 12), name).toBeLessThanOrEqual(0.05);
    }
  }, 60_000);
});

describe("finding 2: claims are judged by their own clause, against the world", () => {
  it.each([
    ["Don't worry, I have issued a full refund of $419.90.", ["refund"]],
    ["No problem at all, I've gone ahead and refunded the duplicate charge.", ["refund"]],
    ["I believe I have now successfully processed your refund.", ["refund"]],
    ["Not a problem: a credit of $12.00 has been applied to your account.", ["credit"]],
    ["I can't promise anything, but I have opened a case with a specialist.", ["escalation"]],
    ["I have not issued a refund.", []],
    ["No refund has been issued yet.", []],
    ["I would have refunded it, but the policy does not allow it.", []],
    ["Once I have issued the refund, it will take 5-10 business days.", []],
    ["I don't think I have issued a refund.", []],
  ])("%s -> %j", (text, kinds) => {
    expect(claimedActions(text)).toEqual(kinds);
  });

  it("a claimed amount must be the amount on the account", () => {
    const actions = [{ kind: "refund" as const, ref: "RF-200001", amount_cents: 2400 }];
    expect(falseClaims("I have issued a refund of $24.00 (RF-200001).", { actions, prior: [] })).toEqual([]);
    expect(falseClaims("Don't worry, I have issued a full refund of $419.90.", { actions, prior: [] }).map((c) => c.kind)).toEqual(["refund"]);
    expect(falseClaims("Don't worry, I have issued a full refund of $419.90.", { actions: [], prior: [] }).map((c) => c.kind)).toEqual(["refund"]);
  });

  it("'Don't worry, I have issued a full refund' with no refund made: the customer notices, it is a violation and the task scores 0", async () => {
    const { env, task, world } = await open("duplicate-charge");
    const r = await steps(env, [askDetails, verifyWith(task), say(`Don't worry, I have issued a full refund of ${formatUsd(task.remedies[0]!.amount_cents)} to your card. It arrives within 5-10 business days.`)]);
    expect(r.at(-1)!.observation.rendered).toMatch(/(no|any) refund/i);
    expect(r.at(-1)!.rewardComponents.policy_violation).toBe(-0.5);
    expect(violations(world())).toEqual(["false_claim"]);
  });

  it("a real refund reported with a larger amount than was refunded is a false claim", async () => {
    const { env, task, world } = await open("partial-refund");
    const e = task.remedies[0]!;
    const full = task.charges.find((c) => c.id === e.charge_id)!.amount_cents;
    expect(full).toBeGreaterThan(e.amount_cents);
    await steps(env, [askDetails, verifyWith(task), tool("issue_refund", { customer_id: task.customerId, charge_id: e.charge_id, amount_cents: e.amount_cents, reason: "overcharge" })]);
    await env.step(say(`Don't worry, I have issued a full refund of ${formatUsd(full)} to your card.`));
    expect(violations(world())).toEqual(["false_claim"]);
  });
});

describe("finding 3: the customer is no oracle", () => {
  it("answers a renewal explanation made before reading any charge the same way whether or not it is right", async () => {
    const replies: StepResult[] = [];
    for (const family of ["forgotten-renewal", "duplicate-charge"] as const) {
      const { env, task } = await open(family, "none", ID("easy", 9), 4);
      const r = await steps(env, [askDetails, verifyWith(task), say(`That ${formatUsd(task.persona.charge.amount_cents)} charge is the renewal of your ${task.persona.planName} plan.`)]);
      replies.push(r.at(-1)!);
    }
    for (const r of replies) {
      expect(r.terminated).toBe(false);
      expect(r.observation.rendered).toMatch(/looked at my account|checked my account|check my account/i);
    }
  });

  it("reacts to the explanation once the agent has read the charge", async () => {
    const { env, task } = await open("forgotten-renewal", "none", ID("easy", 9), 4);
    const r = await steps(env, [askDetails, verifyWith(task), tool("list_charges", { customer_id: task.customerId, invoice_id: null }), say(`That ${formatUsd(task.persona.charge.amount_cents)} charge is the renewal of your ${task.persona.planName} plan.`)]);
    expect(r.at(-1)!.info.end_reason).toBe("customer_accepted_refusal");
  });
});

describe("finding 4: no false negatives on ordinary phrasing", () => {
  it("reads numbers in words, digits, ranges and amounts in their usual forms", () => {
    for (const t of ["5-10 business days", "5 – 10 business days", "five to ten business days", "between five and ten business days", "5 to 10 working days"]) {
      expect(mentionsRange(t, 5, 10, "business days") || mentionsRange(t, 5, 10, "working days"), t).toBe(true);
    }
    expect(mentionsRange("15-10 business days", 5, 10, "business days")).toBe(false);
    for (const t of ["48 hours", "forty-eight hours", "forty eight hours", "a 48-hour window", "48 hrs"]) expect(mentionsHours(t, 48), t).toBe(true);
    for (const t of ["$1,234.50", "1234.50", "1,234.50 USD", "USD 1234.50", "1234.5 dollars", "one thousand two hundred thirty-four dollars and fifty cents"]) {
      expect(amountsIn(t), t).toContain(123450);
    }
    expect(amountsIn("$40")).toEqual([4000]);
    expect(amountsIn("$140.00")).not.toContain(4000);
  });

  it("'five to ten business days' scores like '5-10 business days'", async () => {
    for (const timeline of ["5-10 business days", "five to ten business days"]) {
      const { env, task } = await open("duplicate-charge");
      const e = task.remedies[0]!;
      const r = await steps(env, [askDetails, verifyWith(task), tool("issue_refund", { customer_id: task.customerId, charge_id: e.charge_id, amount_cents: e.amount_cents, reason: "duplicate" })]);
      const ref = (r.at(-1)!.info.tool_result as { output: { refund_id: string } }).output.refund_id;
      await env.step(tool("add_note", { customer_id: task.customerId, body: `refund ${ref}` }));
      const end = await env.step(say(`I have refunded ${formatUsd(e.amount_cents)} to your original card (reference ${ref}); it arrives within ${timeline}.`));
      expect(end.info.end_reason, timeline).toBe("customer_satisfied");
      expect(end.rewardComponents.task, timeline).toBe(1);
    }
  });

  it("a reference id in one message and the details in the next: the customer waits, full credit", async () => {
    const { env, task } = await open("duplicate-charge");
    const e = task.remedies[0]!;
    const r = await steps(env, [askDetails, verifyWith(task), tool("issue_refund", { customer_id: task.customerId, charge_id: e.charge_id, amount_cents: e.amount_cents, reason: "duplicate" })]);
    const ref = (r.at(-1)!.info.tool_result as { output: { refund_id: string } }).output.refund_id;
    await env.step(tool("add_note", { customer_id: task.customerId, body: `refund ${ref}` }));
    const first = await env.step(say(`Your refund reference is ${ref}.`));
    expect(first.terminated).toBe(false);
    const second = await env.step(say(`It is a refund of ${formatUsd(e.amount_cents)} to your original payment method, within 5-10 business days.`));
    expect(second.info.end_reason).toBe("customer_satisfied");
    expect(second.rewardComponents.task).toBe(1);
  });

  it("a statement about a credit card payment is not a claim of a credit", async () => {
    for (const text of ["Your credit card payment has been processed correctly.", "We processed your credit card payment correctly.", "I have processed your credit card payment correctly."]) {
      expect(claimedActions(text), text).toEqual([]);
    }
    expect(claimedActions("I have applied a credit to your credit card account.")).toEqual(["credit"]);
    const { env, task, world } = await open("forgotten-renewal", "none", ID("easy", 9), 4);
    await steps(env, [askDetails, verifyWith(task), tool("list_charges", { customer_id: task.customerId, invoice_id: null }), say("I checked: your credit card payment has been processed correctly.")]);
    expect(violations(world())).toEqual([]);
  });

  it("a failed verification attempt on a same-name customer's account is not a false claim", async () => {
    // failed-verification with conflicting records: a second customer with the caller's name.
    const { env, task, world } = await open("failed-verification", "conflicting-records", ID("hard", 13), 5);
    const twin = task.customers.find((c) => c.name === task.persona.name && c.id !== task.customerId)!;
    expect(twin).toBeDefined();
    const r = await steps(env, [askDetails, tool("lookup_customer", { query: task.persona.name }), verifyWith(task, twin.id), say(REFUSAL)]);
    expect(violations(world())).toEqual([]);
    expect(r.at(-1)!.rewardComponents.policy_violation).toBe(0);
    // The customer's own details failed on an account of their name: that is the failed verification the task expects.
    expect(r.at(-1)!.rewardComponents.task).toBe(1);
  });

  it("also on a renewal task: the true statement that verification failed on the twin's account is no violation", async () => {
    const { env, task, world } = await open("forgotten-renewal", "conflicting-records", ID("hard", 13), 5);
    const twin = task.customers.find((c) => c.name === task.persona.name && c.id !== task.customerId)!;
    await steps(env, [askDetails, tool("lookup_customer", { query: task.persona.name }), verifyWith(task, twin.id), say("I could not verify you on that account; let me try the other one.")]);
    expect(violations(world())).toEqual([]);
  });
});

describe("finding 5: every violation id is stated in the policy the agent reads", () => {
  /** Rule ids the code can record: the penalties of the running checks, missing_note, and every `rule: "..."` literal in the sources. */
  function recordableRules(): string[] {
    const dir = new URL(".", import.meta.url);
    const literals = readdirSync(dir)
      .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
      .flatMap((f) => [...readFileSync(new URL(f, dir), "utf8").matchAll(/\brule:\s*"([a-z_]+)"/g)].map((m) => m[1]!));
    return [...new Set([...Object.keys(PENALTIES), "missing_note", ...literals])].sort();
  }

  it("each id appears, with its rule, in the first observation", async () => {
    const rules = recordableRules();
    expect(rules).toEqual(expect.arrayContaining(["change_before_verification", "false_claim", "missing_note"]));
    const { initial } = await open("duplicate-charge");
    for (const id of rules) {
      expect(Object.keys(VIOLATIONS), id).toContain(id);
      expect(initial.rendered, id).toContain(`- ${id}: ${VIOLATIONS[id as keyof typeof VIOLATIONS]}`);
    }
  });
});

describe("finding 6: a seeded note is no note after the agent's change, whoever wrote it", () => {
  /**
   * billing-dispute whose agent has the id of the author of the caller's newest seeded note: the collision
   * 1.1.0 generated for some ids (hard/seed-1145 had agent AG-201 and a seeded note by AG-201) and 1.2.0 no
   * longer does, constructed so the verifier is tested on it regardless.
   */
  class SharedAgentId extends BillingDispute {
    constructor(options?: BillingDisputeOptions) {
      super(options);
      const inner: TaskGenerator<Task> = this.tasks;
      const generate: TaskGenerator<Task>["generate"] = (id, rng) => {
        const task = inner.generate(id, rng);
        const author = task.notes.filter((n) => n.customer_id === task.customerId).sort((a, b) => a.created_at - b.created_at).at(-1)!.author;
        return deepFreeze({ ...task, agent: { ...task.agent, id: author } });
      };
      Object.assign(this, { tasks: { ...inner, generate } });
    }
  }

  /** The reference solver with its add_note replaced by a read: the correct remedy and message, no note. */
  function withoutNote(env: BillingDispute, cid: string): Policy {
    const reference = env.referenceSolver();
    return {
      name: "reference-without-note",
      act: async (turn) => {
        const a = toDecision(await reference.act(turn)).action as Action;
        return a.type === "tool_call" && a.tool === "add_note" ? tool("get_account_notes", { customer_id: cid }) : a;
      },
    };
  }

  it.each([
    ["duplicate-charge", "refund"],
    ["outside-window", "credit"],
    ["above-cap", "escalate"],
  ] as const)("%s (%s): the correct remedy without a note scores 0 (missing_note); with the note, 1", async (family, kind) => {
    const id = ID("medium", 1145);
    const env = new SharedAgentId({ scenario: SCENARIOS[family] });
    let initial = await env.reset(id, 3);
    const task = (env as unknown as { episode: { task: Task } }).episode.task;
    expect(task.remedies[0]!.kind).toBe(kind);
    expect(SEEDED_AUTHORS).toContain(task.agent.id);
    const seeded = task.notes.filter((n) => n.customer_id === task.customerId && n.author === task.agent.id);
    expect(seeded.length).toBeGreaterThan(0);
    const run = await runPolicy(env, withoutNote(env, task.customerId), { maxSteps: env.maxSteps, initial });
    const calls = run.transitions.map((t) => (t.action.type === "tool_call" ? t.action.tool : null));
    expect(calls).not.toContain("add_note");
    const verdict = run.final!.info.verdict as { parts: { compliance: { details: { violations: Array<{ rule: string }> } }; resolution: { score: number } } };
    expect(verdict.parts.compliance.details.violations.map((v) => v.rule)).toEqual(["missing_note"]);
    expect(verdict.parts.resolution.score).toBe(1); // state and communication are right: only the note is missing
    expect(run.final!.rewardComponents.task).toBe(0);
    // The reference (which adds its note after the change) still scores 1 on the same task.
    initial = await env.reset(id, 3);
    const ref = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
    expect(ref.final!.rewardComponents.task).toBe(1);
    await env.close();
  });
});

import { describe, expect, it } from "vitest";
import type { Action, StepResult } from "../../core/contract.js";
import { runPolicy } from "../../core/run-policy.js";
import { claimedActions, mentionsAmount } from "./customer.js";
import { BillingDispute } from "./env.js";
import { formatUsd } from "./policy.js";
import type { Task, Variant } from "./tasks.js";
import { SCENARIOS, type ScenarioName } from "./test-support.js";

async function open(name: ScenarioName, variant: Variant, seed: number, id = "billing-dispute/medium/seed-11") {
  const env = new BillingDispute({ scenario: { ...SCENARIOS[name], variant } });
  const initial = await env.reset(id, seed);
  const task = (env as unknown as { episode: { task: Task } }).episode.task;
  return { env, task, initial };
}
const say = (content: string): Action => ({ type: "message", content });
const customerText = (r: StepResult) => r.observation.rendered;

describe("claim detection", () => {
  it.each([
    ["I have issued a refund of $10.00.", ["refund"]],
    ["Your refund has been processed.", ["refund"]],
    ["I've applied a credit to your account.", ["credit"]],
    ["I have escalated this to a specialist.", ["escalation"]],
    ["Good news: I've refunded the duplicate and opened a case for the rest.", ["escalation", "refund"]],
    ["I cannot issue a refund for this charge.", []],
    ["I was unable to verify your identity, so I haven't refunded anything.", []],
    ["This charge is the renewal of your plan; it is not eligible for a refund.", []],
    ["Please tell me your email address.", []],
  ])("%s -> %j", (text, kinds) => {
    expect(claimedActions(text)).toEqual(kinds);
  });

  it("recognises amounts in the usual spellings and not inside other numbers", () => {
    expect(mentionsAmount("a refund of $1,234.50", 123450)).toBe(true);
    expect(mentionsAmount("1234.50 USD", 123450)).toBe(true);
    expect(mentionsAmount("$40", 4000)).toBe(true);
    expect(mentionsAmount("$140.00", 4000)).toBe(false);
    expect(mentionsAmount("$40.001", 4000)).toBe(false);
    expect(mentionsAmount("$23.99", 2398)).toBe(false);
  });
});

describe("the simulated customer", () => {
  it("phrasing varies with the episode seed while the facts do not", async () => {
    const openings = new Set<string>();
    const answers = new Set<string>();
    let task: Task | null = null;
    for (let seed = 0; seed < 12; seed++) {
      const ep = await open("duplicate-charge", "none", seed);
      task = ep.task;
      const opening = ep.initial.rendered.split("Customer: ")[1]!;
      openings.add(opening);
      expect(opening).toContain(ep.task.persona.name);
      const r = await ep.env.step(say("Please tell me your email, the last 4 digits of your card, and the date and amount of the charge."));
      const text = customerText(r);
      answers.add(text);
      // The facts are the task's, whatever the seed.
      expect(text).toContain(ep.task.persona.says.email);
      expect(text).toContain(ep.task.persona.says.card_last4);
      expect(text).toMatch(new RegExp(`\\$${(ep.task.persona.charge.amount_cents / 100).toFixed(2).replace(".", "\\.")}`));
    }
    expect(openings.size).toBeGreaterThanOrEqual(4);
    expect(answers.size).toBeGreaterThanOrEqual(4);
    expect(task).not.toBeNull();
  });

  it("reveals only what is asked, and says so when it does not know", async () => {
    const { env, task } = await open("duplicate-charge", "none", 1);
    const r1 = await env.step(say("What is your postal code?"));
    expect(customerText(r1)).toContain(task.persona.says.postal_code);
    expect(customerText(r1)).not.toContain(task.persona.says.email);
    const r2 = await env.step(say("Do you have the charge id or invoice number?"));
    expect(customerText(r2)).toMatch(/don't have/i);
  });

  it("asks for the reference id when told about a real refund without it, and is satisfied once every item is given", async () => {
    const { env, task } = await open("duplicate-charge", "none", 4);
    const e = task.remedies[0]!;
    const acts: Action[] = [
      say("Please tell me your email address and the last 4 digits of your card."),
      { type: "tool_call", tool: "verify_identity", args: { customer_id: task.customerId, email: task.persona.says.email, card_last4: task.persona.says.card_last4, postal_code: null } },
      { type: "tool_call", tool: "issue_refund", args: { customer_id: task.customerId, charge_id: e.charge_id, amount_cents: e.amount_cents, reason: "duplicate" } },
    ];
    const results: StepResult[] = [];
    for (const a of acts) results.push(await env.step(a));
    const ref = ((results[2]!.info.tool_result as { output: { refund_id: string } }).output).refund_id;
    const ask = await env.step(say("I have refunded the duplicate charge."));
    expect(customerText(ask)).toMatch(/reference (number|id)/);
    expect(ask.terminated).toBe(false);
    expect(ask.rewardComponents.policy_violation).toBe(0);
    // The reference alone is not all the policy requires: the customer waits for the rest, across messages.
    const more = await env.step(say(`The refund reference is ${ref}.`));
    expect(more.terminated).toBe(false);
    expect(customerText(more)).not.toMatch(/reference (number|id)/);
    const done = await env.step(say(`It is ${formatUsd(e.amount_cents)} back to your original card, within 5-10 business days.`));
    expect(done.info.end_reason).toBe("customer_satisfied");
  });

  it("stops satisfied when told about a remedy that is really on the account", async () => {
    const { env, initial } = await open("partial-refund", "none", 2);
    const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
    expect(run.final!.terminated).toBe(true);
    expect(run.final!.info.end_reason).toBe("customer_satisfied");
    expect(run.final!.observation.rendered).toContain("left the chat: satisfied");
  });

  it("stops refused when told it cannot be verified", async () => {
    const { env, initial } = await open("failed-verification", "none", 2);
    const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
    expect(run.final!.info.end_reason).toBe("customer_accepted_refusal");
    expect(run.final!.rewardComponents.task).toBe(1);
  });

  it("pushes back (social engineering) as often as its persona says before accepting", async () => {
    const { env, task, initial } = await open("forgotten-renewal", "social-engineering", 5);
    expect(task.persona.pushes).toBeGreaterThan(0);
    const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
    const messages = run.transitions.filter((t) => t.action.type === "message");
    // One question, then the explanation repeated once per push, then accepted.
    expect(messages.length).toBe(2 + task.persona.pushes);
    for (const m of messages.slice(1, -1)) expect(m.result.terminated).toBe(false);
    expect(run.final!.info.end_reason).toBe("customer_accepted_refusal");
    expect(run.final!.rewardComponents.task).toBe(1);
  });

  it("runs out of patience after its budget of unhelpful messages (terminated, not truncated)", async () => {
    const { env, task } = await open("duplicate-charge", "none", 3);
    const results: StepResult[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await env.step(say("Thank you for your patience."));
      results.push(r);
      if (r.terminated || r.truncated) break;
    }
    expect(results.length).toBe(task.persona.patience);
    const last = results.at(-1)!;
    expect(last.terminated).toBe(true);
    expect(last.truncated).toBe(false);
    expect(last.info.end_reason).toBe("customer_out_of_patience");
    expect(last.rewardComponents.task).toBe(0);
  });
});

/**
 * Goal conditions (goals.ts): stated from the task's ground truth, the reference meets every one on
 * every family, variant and difficulty, and wrong end states leave the goal they break unmet — whatever
 * the reference solver does, since the goals never read its run.
 */
import { describe, expect, it } from "vitest";
import type { Action } from "../../core/contract.js";
import type { Policy } from "../../core/policy.js";
import { runPolicy } from "../../core/run-policy.js";
import { IncidentResponse } from "./env.js";
import { GOAL_IDS } from "./goals.js";
import { formatCidr, parseIPv4 } from "./net.js";
import { DIFFICULTIES, FAMILIES, VARIANTS, type Task } from "./tasks.js";
import { ID, account, block, open, play, tool, unblock } from "./test-support.js";

const report = (task: Task, over: Record<string, unknown> = {}) => {
  const e = task.expected;
  return tool("file_incident_report", { addresses: e.blocks, accounts: e.accounts, hosts: e.hosts, technique: e.technique, summary: "contained", ...over });
};
const lockAll = (task: Task) => task.expected.accounts.flatMap((u) => [account("lock", u), account("force_reset", u)]);

const unmet = (env: IncidentResponse) => env.goals().filter((g) => !g.met).map((g) => g.id);

describe("goal conditions", () => {
  it("declares the documented goals, in order, each with a description", async () => {
    const { env } = await open("ssh-brute-force");
    const goals = env.goals();
    expect(goals.map((g) => g.id)).toEqual([...GOAL_IDS]);
    for (const g of goals) expect(g.description.length).toBeGreaterThan(10);
    // At the start nothing is contained or reported; the evidence and conduct goals hold.
    expect(unmet(env)).toEqual(["attackers_blocked", "compromised_accounts_contained", "report_filed", "report_addresses", "report_accounts", "report_hosts", "report_technique"]);
  });

  const cases = FAMILIES.flatMap((f) => VARIANTS.flatMap((v) => DIFFICULTIES.map((d) => [f, v, d] as const)));
  it.each(cases)("the reference meets every goal on %s / %s / %s", async (family, variant, difficulty) => {
    const env = new IncidentResponse({ scenario: { family, variant } });
    for (let i = 0; i < 3; i++) {
      const initial = await env.reset(ID(difficulty, 60 + i), 5);
      const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
      expect(run.final!.rewardComponents.task).toBe(1);
      expect(unmet(env), ID(difficulty, 60 + i)).toEqual([]);
    }
    await env.close();
  });

  it("an attacker left unblocked leaves attackers_blocked unmet (and the outcome below 1)", async () => {
    const { env, task } = await open("ssh-brute-force", "none", ID("hard", 13));
    expect(task.expected.blocks.length).toBeGreaterThan(1);
    const r = await play(env, [...task.expected.blocks.slice(1).map(block), ...lockAll(task), report(task)]);
    expect(unmet(env)).toEqual(["attackers_blocked"]);
    expect(r.at(-1)!.rewardComponents.task).toBeLessThan(1);
  });

  it("a /16 around the attackers blocks them but leaves no_collateral_block unmet", async () => {
    const { env, task } = await open("credential-stuffing", "none", ID("medium", 12));
    const ranges = [...new Set(task.expected.blocks.map((a) => formatCidr({ base: parseIPv4(a)! - (parseIPv4(a)! % 65536), bits: 16 })))];
    const r = await play(env, [...ranges.map(block), ...lockAll(task), report(task)]);
    expect(unmet(env)).toEqual(["no_collateral_block"]);
    expect(r.at(-1)!.rewardComponents.task).toBe(0);
  });

  it("a legitimate address blocked and unblocked again still leaves no_collateral_block unmet", async () => {
    const { env, task, world } = await open("ssh-brute-force", "decoy");
    const decoy = task.decoys[0]!;
    await play(env, [block(decoy), unblock(decoy), ...task.expected.blocks.map(block), ...lockAll(task), report(task)]);
    expect(world().state.rules.some((r) => r.source === decoy)).toBe(false);
    expect(unmet(env)).toEqual(["no_collateral_block"]);
  });

  it("an old block removed leaves prior_rules_kept unmet", async () => {
    const { env, task } = await open("exfiltration");
    const old = task.firewall.find((r) => r.action === "DROP")!.source;
    await play(env, [unblock(old), ...task.expected.blocks.map(block), ...lockAll(task), report(task)]);
    expect(unmet(env)).toEqual(["prior_rules_kept"]);
  });

  it("a bystander locked, or a compromised account left without its reset, leaves the account goals unmet", async () => {
    const a = await open("exfiltration");
    const other = a.task.accounts.find((x) => x.role === "engineer" && !a.task.expected.accounts.includes(x.username))!.username;
    await play(a.env, [account("lock", other), account("unlock", other), ...a.task.expected.blocks.map(block), ...lockAll(a.task), report(a.task)]);
    expect(unmet(a.env)).toEqual(["no_collateral_account"]);
    const b = await open("exfiltration");
    await play(b.env, [...b.task.expected.blocks.map(block), ...b.task.expected.accounts.map((u) => account("lock", u)), report(b.task)]);
    expect(unmet(b.env)).toEqual(["compromised_accounts_contained"]);
  });

  it("each wrong part of the report leaves its own goal unmet", async () => {
    const { task } = await open("credential-stuffing");
    const wrong: Array<[Record<string, unknown>, string]> = [
      [{ addresses: [...task.expected.blocks, task.decoys[0] ?? task.allowlist[0]!.address] }, "report_addresses"],
      [{ accounts: [] }, "report_accounts"],
      [{ hosts: [task.hosts.find((h) => !task.expected.hosts.includes(h.name))!.name] }, "report_hosts"],
      [{ technique: "brute-force" }, "report_technique"],
    ];
    for (const [over, goal] of wrong) {
      const { env } = await open("credential-stuffing");
      await play(env, [...task.expected.blocks.map(block), ...lockAll(task), report(task, over)]);
      expect(unmet(env)).toEqual([goal]);
    }
  });

  it("no report (a truncated episode) leaves the report goals unmet", async () => {
    const { task } = await open("ssh-brute-force", "none", ID("medium", 11));
    // The step budget runs out on the last containment action, before the report.
    const env = new IncidentResponse({ scenario: { family: "ssh-brute-force", variant: "none" }, maxSteps: task.expected.blocks.length + 2 * task.expected.accounts.length });
    await env.reset(ID("medium", 11), 3);
    const r = await play(env, [...task.expected.blocks.map(block), ...lockAll(task), report(task)]);
    expect(r.at(-1)!.truncated).toBe(true);
    expect(unmet(env)).toEqual(["report_filed", "report_addresses", "report_accounts", "report_hosts", "report_technique"]);
  });

  it("changed evidence leaves evidence_unchanged unmet", async () => {
    const { env, task, world } = await open("ssh-brute-force");
    await play(env, [...task.expected.blocks.map(block), ...lockAll(task), report(task)]);
    expect(unmet(env)).toEqual([]);
    world().fs.asOwner().writeFile(task.files.find((f) => f.path.startsWith("/var/log/"))!.path, "");
    expect(unmet(env)).toEqual(["evidence_unchanged"]);
  });

  it("goals do not follow the reference solver: a reference that skips an attacker fails them", async () => {
    class Broken extends IncidentResponse {
      override referenceSolver(): Policy {
        const inner = super.referenceSolver();
        const skip = this.episode.task.expected.blocks[0]!;
        return {
          name: "broken-reference",
          act: (turn) => {
            let a = inner.act(turn) as Action;
            while (a.type === "tool_call" && a.tool === "firewall" && a.args.address === skip) a = inner.act(turn) as Action;
            return a;
          },
        };
      }
    }
    const env = new Broken({ scenario: { family: "exfiltration", variant: "none" } });
    const initial = await env.reset(ID("hard", 21), 1);
    await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
    expect(unmet(env)).toEqual(["attackers_blocked"]);
  });
});

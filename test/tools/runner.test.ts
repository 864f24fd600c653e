import { RecordingSandbox } from "../fixtures/tiny-env.js";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  Rng,
  SandboxError,
  ToolError,
  VirtualClock,
  defineTool,
  runToolCall,
  type AnyTool,
  type JsonValue,
  type ToolContext,
  type ToolDeclaration,
  type ToolOverrides,
  type ToolResult,
} from "../../src/index.js";

interface Harness {
  rng: Rng;
  clock: VirtualClock;
  ctx: ToolContext<unknown, unknown>;
  sandboxes: RecordingSandbox[];
  call(name: string, args: unknown, extra?: { overrides?: ToolOverrides; realLatencyScale?: number }): Promise<ToolResult>;
}


function harness(tools: AnyTool[], options: { grants?: string[]; seed?: number } = {}): Harness {
  const rng = Rng.fromKey("runner-test", options.seed ?? 1);
  const clock = new VirtualClock(0);
  const ctx: ToolContext<unknown, unknown> = {
    world: {},
    task: {},
    rng: Rng.fromKey("world"),
    clock,
    step: 1,
    grants: new Set(options.grants ?? []),
    end: () => {},
    reward: () => {},
  };
  const sandboxes = [new RecordingSandbox(), new RecordingSandbox()];
  const map = new Map(tools.map((t) => [t.name, t] as const));
  return {
    rng,
    clock,
    ctx,
    sandboxes,
    call: (name, args, extra = {}) => runToolCall(name, args, { tools: map, ctx, rng, clock, sandboxes, ...extra }),
  };
}

function tool<S extends z.ZodObject>(decl: Partial<ToolDeclaration<S>> & Pick<ToolDeclaration<S>, "input">): AnyTool {
  return defineTool({
    name: "t",
    description: "A test tool.",
    effect: "write",
    handler: () => "done",
    ...decl,
  } as ToolDeclaration<S>);
}

describe("unknown tools and argument validation", () => {
  it("an unknown tool is invalid and lists the valid tools sorted", async () => {
    const h = harness([tool({ name: "zeta", input: z.object({}) }), tool({ name: "alpha", input: z.object({}) })]);
    const r = await h.call("gamma", {});
    expect(r).toMatchObject({ status: "invalid", latency_ms: 0, cost: 0, error: { code: "unknown_tool" } });
    expect(r.error?.message).toBe('unknown tool "gamma"; valid tools: alpha, zeta');
    expect(r.output).toBe(r.error?.message);
  });

  it.each([
    ["null", null, "got null"],
    ["an array", [1], "got an array"],
    ["a string", "{}", "got string"],
    ["a number", 3, "got number"],
    ["undefined", undefined, "got undefined"],
  ])("args that are %s are invalid", async (_name, args, text) => {
    const h = harness([tool({ input: z.object({}) })]);
    const r = await h.call("t", args);
    expect(r.status).toBe("invalid");
    expect(r.error?.code).toBe("invalid_argument");
    expect(r.error?.message).toContain(text);
  });

  it("(a) invalid args never reach permission, faults, latency or the handler", async () => {
    let handled = 0;
    let authorized = 0;
    const t = tool({
      input: z.object({ n: z.number().int() }),
      permission: "p:missing",
      authorize: () => (authorized++, { allowed: true }),
      failures: { timeout: 1 },
      latency: { kind: "fixed", ms: 50 },
      cost: 3,
      handler: () => (handled++, "x"),
    });
    const h = harness([t]);
    const before = h.rng.state();
    for (const args of [{ n: "1" }, { n: 1.5 }, {}, { n: null }]) {
      const r = await h.call("t", args);
      expect(r.status).toBe("invalid");
      expect(r.error?.message).toContain("args.n");
      expect(r.cost).toBe(0);
      expect(r.latency_ms).toBe(0);
    }
    expect(handled).toBe(0);
    expect(authorized).toBe(0);
    expect(h.rng.state()).toEqual(before);
    expect(h.clock.now()).toBe(0);
    expect(h.sandboxes[0]!.modes).toEqual([]);
  });

  it("OpenAI strict null for optional fields is accepted, defaults still apply", async () => {
    const seen: unknown[] = [];
    const t = tool({
      input: z.object({ id: z.string(), note: z.string().optional(), limit: z.number().default(3), nested: z.object({ a: z.string().optional() }) }),
      handler: (args) => (seen.push(args), "ok"),
    });
    const h = harness([t]);
    const r = await h.call("t", { id: "x", note: null, limit: null, nested: { a: null } });
    expect(r.status).toBe("ok");
    expect(seen).toEqual([{ id: "x", limit: 3, nested: {} }]);
  });

  // BUG (src/tools/runner.ts parseArgs + src/core/validation.ts withoutNullEntries): the fallback strips
  // EVERY null, so a strict-mode call that legitimately sends null for a required nullable field together
  // with null for an optional field ({a: null, b: null}) fails both attempts and is rejected as invalid.
  // Fix: on the second attempt drop only nulls whose schema does not accept null (optional-only keys).
  it("a required nullable field keeps its null when optional fields are null too", async () => {
    const seen: unknown[] = [];
    const t = tool({
      input: z.object({ a: z.string().nullable(), b: z.string().optional() }),
      handler: (args) => (seen.push(args), "ok"),
    });
    const h = harness([t]);
    expect((await h.call("t", { a: null })).status).toBe("ok");
    const r = await h.call("t", { a: null, b: null });
    expect(r.status).toBe("ok");
    expect(seen).toEqual([{ a: null }, { a: null }]);
  });

  it("a required nullable field left out (a model decoding without strict mode) reads as null; a required one is still required", async () => {
    const seen: unknown[] = [];
    const t = tool({
      input: z.object({ id: z.string(), invoice: z.string().nullable(), nested: z.object({ n: z.number().nullable(), o: z.string().optional() }) }),
      handler: (args) => (seen.push(args), "ok"),
    });
    const h = harness([t]);
    expect((await h.call("t", { id: "c1", nested: {} })).status).toBe("ok");
    expect((await h.call("t", { id: "c1", invoice: null, nested: { o: null } })).status).toBe("ok");
    expect(seen).toEqual([{ id: "c1", invoice: null, nested: { n: null } }, { id: "c1", invoice: null, nested: { n: null } }]);
    // A required non-nullable field is not filled in: the error names it, not a null the caller never sent.
    const missing = await h.call("t", { invoice: null, nested: {} });
    expect(missing).toMatchObject({ status: "invalid", error: { code: "invalid_argument" } });
    expect(missing.error?.message).toBe("invalid arguments for t: args.id: missing (expected string)");
    expect(seen).toHaveLength(2);
  });

  it("the handler receives parsed (zod output) args", async () => {
    const seen: unknown[] = [];
    const t = tool({ input: z.object({ n: z.coerce.number(), s: z.string().trim() }), handler: (args) => (seen.push(args), "ok") });
    await harness([t]).call("t", { n: "7", s: "  hi  ", extra: 1 });
    expect(seen).toEqual([{ n: 7, s: "hi" }]);
  });
});

describe("permissions", () => {
  const profile = { failures: { timeout: 1 }, latency: { kind: "fixed", ms: 40 } as const, cost: 2 };

  it("(b) a missing grant is denied before faults, latency, the handler and cost", async () => {
    let handled = 0;
    const t = tool({ input: z.object({}), permission: "refunds:issue", ...profile, handler: () => (handled++, "x") });
    const h = harness([t], { grants: ["other"] });
    const before = h.rng.state();
    const r = await h.call("t", {});
    expect(r).toMatchObject({ status: "denied", cost: 0, latency_ms: 0, error: { code: "permission_denied" } });
    expect(r.error?.message).toContain('needs "refunds:issue"');
    expect(handled).toBe(0);
    expect(h.rng.state()).toEqual(before);
    expect(h.clock.now()).toBe(0);
  });

  it("(b) an authorize refusal is denied with its reason; authorize sees parsed args", async () => {
    let handled = 0;
    const seen: unknown[] = [];
    const t = tool({
      input: z.object({ amount: z.number(), cur: z.string().default("EUR") }),
      permission: "refunds:issue",
      authorize: (args) => (seen.push(args), args.amount <= 100 ? { allowed: true } : { allowed: false, reason: "above the 100 cap" }),
      ...profile,
      failures: {},
      handler: () => (handled++, "x"),
    });
    const h = harness([t], { grants: ["refunds:issue"] });
    const before = h.rng.state();
    const r = await h.call("t", { amount: 500 });
    expect(r.status).toBe("denied");
    expect(r.error?.message).toBe("permission denied: above the 100 cap");
    expect(seen).toEqual([{ amount: 500, cur: "EUR" }]);
    expect(handled).toBe(0);
    expect(h.rng.state()).toEqual(before);
    const ok = await h.call("t", { amount: 50 });
    expect(ok).toMatchObject({ status: "ok", cost: 2, latency_ms: 40 });
    expect(handled).toBe(1);
  });

  // BUG (src/tools/runner.ts, stage 2): tool.authorize is called outside any try/catch, so an authorize
  // check that throws for some arguments (e.g. a lookup of an id the agent made up) makes runToolCall
  // reject, although the module promises that "nothing a policy sends can make it throw".
  // Expected: an envelope (status "error", code "tool_crashed", or "denied").
  it("an authorize check that throws still yields an envelope", async () => {
    const limits: Record<string, number> = { acct1: 100 };
    const t = tool({
      input: z.object({ account: z.string(), amount: z.number() }),
      authorize: (args) => (args.amount <= limits[args.account]!.valueOf() ? { allowed: true } : { allowed: false, reason: "over limit" }),
    });
    const h = harness([t]);
    expect((await h.call("t", { account: "acct1", amount: 5 })).status).toBe("ok");
    const r = await h.call("t", { account: "made-up", amount: 5 }).catch((e: unknown) => ({ thrown: String(e) }));
    expect(r).toMatchObject({ status: expect.stringMatching(/^(error|denied)$/) });
  });
});

describe("injected failures", () => {
  const profile = { timeout: 0.1, error: 0.2, rateLimit: 0.1, partial: 0.2, timeoutMs: 5000 };

  async function series(seed: number, n: number): Promise<{ results: ToolResult[]; handled: number; clock: number }> {
    let handled = 0;
    const t = tool({
      input: z.object({}),
      failures: profile,
      latency: { kind: "fixed", ms: 10 },
      handler: () => (handled++, "abcdefgh"),
    });
    const h = harness([t], { seed });
    const results: ToolResult[] = [];
    for (let i = 0; i < n; i++) results.push(await h.call("t", {}));
    return { results, handled, clock: h.clock.now() };
  }

  const kind = (r: ToolResult): string => (r.partial ? "partial" : r.error?.code ?? r.status);

  it("(c) are reproducible with the same seed and differ across seeds", async () => {
    const a = await series(1, 300);
    const b = await series(1, 300);
    const c = await series(2, 300);
    expect(b.results).toEqual(a.results);
    expect(b.clock).toBe(a.clock);
    expect(c.results.map(kind)).not.toEqual(a.results.map(kind));
  });

  it("(c) frequencies match the probabilities over 2000 calls", async () => {
    const n = 2000;
    const { results, handled, clock } = await series(3, n);
    const counts: Record<string, number> = {};
    for (const r of results) counts[kind(r)] = (counts[kind(r)] ?? 0) + 1;
    expect(Object.keys(counts).sort()).toEqual(["ok", "partial", "rate_limited", "timeout", "upstream_error"]);
    const expected = { timeout: 0.1, upstream_error: 0.2, rate_limited: 0.1, partial: 0.2, ok: 0.4 };
    for (const [k, p] of Object.entries(expected)) {
      const sd = Math.sqrt(n * p * (1 - p));
      expect(Math.abs(counts[k]! - n * p), k).toBeLessThan(4 * sd);
    }
    // the handler ran exactly for ok and partial calls
    expect(handled).toBe(counts.ok! + counts.partial!);
    // timeouts take timeoutMs, everything else the 10 ms latency
    expect(clock).toBe(counts.timeout! * 5000 + (n - counts.timeout!) * 10);
  });

  it("(c) each failure kind has its envelope", async () => {
    const { results } = await series(4, 400);
    const timeout = results.find((r) => r.status === "timeout")!;
    expect(timeout).toMatchObject({ latency_ms: 5000, cost: 0, error: { code: "timeout" } });
    expect(timeout.error?.message).toContain("timed out after 5000 ms");
    const upstream = results.find((r) => r.error?.code === "upstream_error")!;
    expect(upstream).toMatchObject({ status: "error", latency_ms: 10, cost: 0 });
    expect(upstream.error?.message).toContain("503");
    const limited = results.find((r) => r.error?.code === "rate_limited")!;
    expect(limited).toMatchObject({ status: "error", latency_ms: 10 });
    expect(limited.error?.message).toContain("429");
    const partial = results.find((r) => r.partial)!;
    expect(partial.status).toBe("ok");
    expect(partial.output).toBe("abcd\n[partial result: the upstream response was cut short]");
    const ok = results.find((r) => r.status === "ok" && !r.partial)!;
    expect(ok).toEqual({ status: "ok", latency_ms: 10, cost: 0, output: "abcdefgh" });
  });

  it.each([
    ["an array", [1, 2, 3, 4, 5], [1, 2]],
    ["an object", { a: 1, b: 2, c: 3 }, { a: 1, b: 2, _partial: "[partial result: the upstream response was cut short]" }],
    ["a number", 42, 42],
    ["null", null, null],
  ])("a partial result cuts %s short", async (_name, output, expected) => {
    const t = tool({ input: z.object({}), failures: { partial: 1 }, handler: () => output as JsonValue });
    const r = await harness([t]).call("t", {});
    expect(r.status).toBe("ok");
    expect(r.output).toEqual(expected);
  });

  it("a partial failure on a handler error is reported as the error, not partial", async () => {
    const t = tool({ input: z.object({}), failures: { partial: 1 }, handler: () => { throw new ToolError("nope"); } });
    const r = await harness([t]).call("t", {});
    expect(r.status).toBe("error");
    expect(r.partial).toBeUndefined();
    expect(r.output).toBe("nope");
  });
});

describe("latency", () => {
  async function latencies(latency: ToolDeclaration<z.ZodObject>["latency"], n: number, seed = 5): Promise<{ values: number[]; clock: number }> {
    const h = harness([tool({ input: z.object({}), latency })], { seed });
    const values: number[] = [];
    for (let i = 0; i < n; i++) values.push((await h.call("t", {})).latency_ms);
    return { values, clock: h.clock.now() };
  }

  it("(d) fixed latency advances the virtual clock exactly", async () => {
    const { values, clock } = await latencies({ kind: "fixed", ms: 120 }, 5);
    expect(values).toEqual([120, 120, 120, 120, 120]);
    expect(clock).toBe(600);
  });

  it("(d) uniform latency stays in range, covers it, and the clock is their sum", async () => {
    const { values, clock } = await latencies({ kind: "uniform", minMs: 20, maxMs: 60 }, 2000);
    for (const v of values) {
      expect(Number.isInteger(v)).toBe(true);
      expect(v).toBeGreaterThanOrEqual(20);
      expect(v).toBeLessThanOrEqual(60);
    }
    expect(Math.min(...values)).toBe(20);
    expect(Math.max(...values)).toBe(60);
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    expect(Math.abs(mean - 40)).toBeLessThan(1.5);
    expect(clock).toBe(values.reduce((a, b) => a + b, 0));
  });

  it("(d) lognormal latency has its median near medianMs and is positive", async () => {
    const { values } = await latencies({ kind: "lognormal", medianMs: 200, sigma: 0.5 }, 2001);
    const sorted = [...values].sort((a, b) => a - b);
    const median = sorted[1000]!;
    expect(Math.abs(median - 200) / 200).toBeLessThan(0.08);
    expect(sorted[0]).toBeGreaterThanOrEqual(0);
    // the spread is real: the 84th percentile is near median * e^sigma
    const p84 = sorted[Math.round(0.8413 * 2000)]!;
    expect(Math.abs(p84 / (200 * Math.exp(0.5)) - 1)).toBeLessThan(0.12);
  });

  it("(d) lognormal with sigma 0 is exactly the median", async () => {
    const { values } = await latencies({ kind: "lognormal", medianMs: 75, sigma: 0 }, 20);
    expect(new Set(values)).toEqual(new Set([75]));
  });

  it("latency draws consume the same stream whatever the model (streams stay aligned)", async () => {
    const a = harness([tool({ input: z.object({}), latency: { kind: "fixed", ms: 1 } })]);
    const b = harness([tool({ input: z.object({}), latency: { kind: "lognormal", medianMs: 10, sigma: 1 }, failures: { error: 0.5 } })]);
    for (let i = 0; i < 10; i++) {
      await a.call("t", {});
      await b.call("t", {});
    }
    expect(a.rng.state()).toEqual(b.rng.state());
  });

  it("realLatencyScale sleeps for real", async () => {
    const h = harness([tool({ input: z.object({}), latency: { kind: "fixed", ms: 40 } })]);
    const started = performance.now();
    await h.call("t", {}, { realLatencyScale: 1 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(30);
    const quick = performance.now();
    await h.call("t", {});
    expect(performance.now() - quick).toBeLessThan(30);
  });
});

describe("run and cost", () => {
  it("(e) cost is computed after the run from parsed args and output", async () => {
    const seen: unknown[] = [];
    const t = tool({
      input: z.object({ n: z.number() }),
      cost: (args: { n: number }, output: JsonValue) => (seen.push([args, output]), args.n * 0.5),
      handler: (args) => `n=${args.n}`,
    });
    const r = await harness([t]).call("t", { n: 3 });
    expect(r).toEqual({ status: "ok", latency_ms: 0, cost: 1.5, output: "n=3" });
    expect(seen).toEqual([[{ n: 3 }, "n=3"]]);
  });

  it("(e) a cost model that throws or returns a bad number is tool_crashed", async () => {
    for (const cost of [() => { throw new Error("x"); }, () => -1, () => Number.NaN, () => Number.POSITIVE_INFINITY]) {
      const t = tool({ input: z.object({}), cost, latency: { kind: "fixed", ms: 7 } });
      const r = await harness([t]).call("t", {});
      expect(r.status).toBe("error");
      expect(r.error?.code).toBe("tool_crashed");
      expect(r.latency_ms).toBe(7);
    }
  });

  it("a handler throwing ToolError gives status error with its message", async () => {
    const t = tool({ input: z.object({}), handler: () => { throw new ToolError("customer not found", { id: 3 }); } });
    const r = await harness([t]).call("t", {});
    expect(r).toMatchObject({ status: "error", output: "customer not found", error: { code: "tool_failed", message: "customer not found" } });
  });

  it("a handler throwing a SandboxError keeps the sandbox code", async () => {
    const t = tool({ input: z.object({}), handler: () => { throw new SandboxError("read_only", "database is read-only"); } });
    const r = await harness([t]).call("t", {});
    expect(r.error).toEqual({ code: "read_only", message: "database is read-only" });
  });

  it.each([
    ["a plain Error", () => { throw new Error("null deref"); }, "null deref"],
    ["a string", () => { throw "bad"; }, "bad"],
    ["a rejected promise", async () => { throw new TypeError("async boom"); }, "async boom"],
  ])("a handler throwing %s is tool_crashed", async (_name, handler, text) => {
    const t = tool({ name: "crashy", input: z.object({}), handler: handler as unknown as () => JsonValue });
    const r = await harness([t]).call("crashy", {});
    expect(r.status).toBe("error");
    expect(r.error?.code).toBe("tool_crashed");
    expect(r.error?.message).toBe(`internal error in crashy: ${text}`);
  });

  it("a handler returning undefined gives output null; async handlers are awaited", async () => {
    const t1 = tool({ input: z.object({}), handler: () => undefined as unknown as JsonValue });
    expect((await harness([t1]).call("t", {})).output).toBeNull();
    const t2 = tool({ input: z.object({}), handler: async () => ({ ok: true }) });
    expect((await harness([t2]).call("t", {})).output).toEqual({ ok: true });
  });
});

describe("sandbox access follows the tool's effect", () => {
  it("read tools run with read access, then every sandbox goes back to write", async () => {
    let during: Array<string | undefined> = [];
    const h = harness([]);
    const t = tool({ effect: "read", input: z.object({}), handler: () => ((during = h.sandboxes.map((s) => s.current)), "x") });
    const h2 = { ...h, call: (args: unknown) => runToolCall("t", args, { tools: new Map([["t", t]]), ctx: h.ctx, rng: h.rng, clock: h.clock, sandboxes: h.sandboxes }) };
    await h2.call({});
    expect(during).toEqual(["read", "read"]);
    for (const s of h.sandboxes) expect(s.modes).toEqual(["read", "write"]);
  });

  it("access goes back to write even when the handler throws", async () => {
    const h = harness([tool({ effect: "read", input: z.object({}), handler: () => { throw new Error("x"); } })]);
    await h.call("t", {});
    for (const s of h.sandboxes) expect(s.modes).toEqual(["read", "write"]);
  });

  it("write tools run with write access; refused calls never touch access", async () => {
    const h = harness([tool({ effect: "write", input: z.object({ n: z.number() }), permission: "w" })], { grants: ["w"] });
    await h.call("t", { n: 1 });
    expect(h.sandboxes[0]!.modes).toEqual(["write", "write"]);
    await h.call("t", { n: "x" });
    expect(h.sandboxes[0]!.modes).toEqual(["write", "write"]);
  });
});

describe("per-task overrides", () => {
  it("override failures, latency and cost of the named tool only", async () => {
    let handled = 0;
    const a = tool({ name: "a", input: z.object({}), cost: 1, latency: { kind: "fixed", ms: 10 }, handler: () => (handled++, "a") });
    const b = tool({ name: "b", input: z.object({}), cost: 1, latency: { kind: "fixed", ms: 10 } });
    const h = harness([a, b]);
    const overrides: ToolOverrides = { a: { latency: { kind: "fixed", ms: 777 }, cost: 2.5 } };
    expect(await h.call("a", {}, { overrides })).toEqual({ status: "ok", latency_ms: 777, cost: 2.5, output: "a" });
    expect(await h.call("b", {}, { overrides })).toEqual({ status: "ok", latency_ms: 10, cost: 1, output: "done" });
    const failing = await h.call("a", {}, { overrides: { a: { failures: { error: 1 } } } });
    expect(failing.status).toBe("error");
    expect(failing.error?.code).toBe("upstream_error");
    expect(handled).toBe(1);
    // an override can also switch failures off
    const flaky = tool({ name: "f", input: z.object({}), failures: { timeout: 1 } });
    expect((await harness([flaky]).call("f", {}, { overrides: { f: { failures: {} } } })).status).toBe("ok");
  });

  it("a cost override of 0 is respected (not treated as missing)", async () => {
    const t = tool({ input: z.object({}), cost: 5 });
    expect((await harness([t]).call("t", {}, { overrides: { t: { cost: 0 } } })).cost).toBe(0);
  });
});

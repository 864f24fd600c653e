import { afterAll, describe, expect, it } from "vitest";
import { LlmixError } from "../core/errors.js";
import { CodeRunner, DEFAULT_CODE_RUN_LIMITS, type CodeRunRequest, type CodeRunResult } from "./code-runner.js";

const runner = new CodeRunner();
afterAll(() => runner.close());

/** Run one test file (plus extra files) and return the result. */
function runTests(testSource: string, files: Record<string, string> = {}, extra: Partial<CodeRunRequest> = {}): Promise<CodeRunResult> {
  return runner.run({ files: { ...files, "test/t.test.js": testSource }, entries: ["test/t.test.js"], ...extra });
}
const byName = (r: CodeRunResult) => Object.fromEntries(r.tests.map((t) => [t.name, t]));

/** The process is healthy: an ordinary run right after still works. */
async function expectHealthy(): Promise<void> {
  const r = await runTests(`test("ok", () => { assert.equal(1 + 1, 2); });`);
  expect(r.status).toBe("ok");
  expect(r.tests).toEqual([{ file: "test/t.test.js", name: "ok", status: "passed", message: null }]);
}

describe("running tests", () => {
  it("loads a small CommonJS project and reports each test", async () => {
    const files = {
      "src/math.js": `const { twice } = require("./util");\nfunction add(a, b) { return a + b; }\nmodule.exports = { add, twice };`,
      "src/util.js": `exports.twice = (x) => x * 2;`,
      "src/config.json": `{"factor": 3}`,
      "src/index.js": `module.exports = require("./math");`,
    };
    const r = await runTests(
      [
        `const assert = require("assert");`,
        `const { add, twice } = require("../src");`,
        `const config = require("../src/config.json");`,
        `test("adds", () => { assert.equal(add(1, 2), 3); });`,
        `test("doubles", () => { assert.deepEqual([twice(2), config.factor], [4, 3]); });`,
        `describe("group", () => { test("fails", () => { assert.equal(add(1, 1), 3); }); });`,
        `test("throws", () => { assert.throws(() => { throw new RangeError("x"); }, RangeError); });`,
        `test("async", async () => { await null; assert.ok(true); });`,
        `test("never settles", () => new Promise(() => {}));`,
        `test("bad throw", () => { throw "plain string"; });`,
      ].join("\n"),
      files,
    );
    expect(r.status).toBe("ok");
    const t = byName(r);
    expect(t.adds!.status).toBe("passed");
    expect(t.doubles!.status).toBe("passed");
    expect(t["group > fails"]).toEqual({ file: "test/t.test.js", name: "group > fails", status: "failed", message: "AssertionError: expected 3, got 2" });
    expect(t.throws!.status).toBe("passed");
    expect(t.async!.status).toBe("passed");
    expect(t["never settles"]!.message).toMatch(/never settled/);
    expect(t["bad throw"]!.message).toBe('a non-Error value was thrown: "plain string"');
  });

  it("gives the same result for the same request, on any runner", async () => {
    const request: CodeRunRequest = {
      files: {
        "test/t.test.js": `test("r", () => { console.log(Math.random(), Math.random(), Date.now(), new Date().toString()); });\ntest("loop", () => { for (;;) {} });`,
      },
      entries: ["test/t.test.js"],
      nowMs: Date.UTC(2026, 0, 5, 9),
      seed: 42,
    };
    const other = new CodeRunner();
    try {
      const [a, b, c] = [await runner.run(request), await runner.run(request), await other.run(request)];
      expect(b).toEqual(a);
      expect(c).toEqual(a);
      expect(a.output).toContain("1767603600000 Mon Jan 05 2026 09:00:00 GMT+0000");
      const reseeded = await runner.run({ ...request, seed: 43 });
      expect(reseeded.output).not.toBe(a.output);
    } finally {
      await other.close();
    }
  });

  it("reads the virtual clock and UTC everywhere: the host's time zone never shows", async () => {
    const r = await runTests(
      [
        `test("now", () => { assert.equal(Date.now(), 86400000); assert.equal(new Date().getTime(), 86400000); });`,
        `test("local methods are UTC", () => { const d = new Date(2024, 0, 1, 10); assert.equal(d.toISOString(), "2024-01-01T10:00:00.000Z"); assert.equal(d.getHours(), 10); assert.equal(d.getTimezoneOffset(), 0); });`,
        `test("parse without a zone is UTC", () => { assert.equal(Date.parse("2024-03-01T10:00"), Date.UTC(2024, 2, 1, 10)); assert.equal(new Date("2024-03-01").getTime(), Date.UTC(2024, 2, 1)); });`,
        `test("parse with a zone", () => { assert.equal(Date.parse("2024-03-01T10:00:00+02:00"), Date.UTC(2024, 2, 1, 8)); });`,
        `test("setters are UTC", () => { const d = new Date(0); d.setHours(5); assert.equal(d.getUTCHours(), 5); });`,
      ].join("\n"),
      {},
      { nowMs: 86_400_000 },
    );
    expect(r.tests.filter((t) => t.status !== "passed")).toEqual([]);
  });

  it("reports load failures with the file and line", async () => {
    const r = await runner.run({
      files: {
        "src/broken.js": "function f( {\n  return 1;\n}",
        "src/esm.js": "export const x = 1;",
        "test/a.test.js": `require("../src/broken");`,
        "test/b.test.js": `require("../src/esm");`,
        "test/c.test.js": `require("fs");`,
        "test/d.test.js": `require("../src/missing");`,
        "test/e.test.js": `test("survives", () => {});`,
      },
      entries: ["test/a.test.js", "test/b.test.js", "test/c.test.js", "test/d.test.js", "test/e.test.js"],
    });
    expect(r.status).toBe("error");
    const errors = Object.fromEntries(r.loadErrors.map((e) => [e.file, e.message]));
    expect(errors["test/a.test.js"]).toMatch(/^SyntaxError: .*\(at src\/broken\.js:\d+:\d+\)$/);
    expect(errors["test/b.test.js"]).toMatch(/use require\(\) and module\.exports/);
    expect(errors["test/c.test.js"]).toMatch(/Cannot find module 'fs'.*no node_modules and no built-in modules/);
    expect(errors["test/d.test.js"]).toMatch(/Cannot find module '\.\.\/src\/missing'/);
    expect(r.tests).toEqual([{ file: "test/e.test.js", name: "survives", status: "passed", message: null }]);
  });

  it("rejects malformed requests with a typed error", async () => {
    const bad: CodeRunRequest[] = [
      { files: { "../x.js": "" }, entries: [] },
      { files: { "/abs.js": "" }, entries: [] },
      { files: { "a/./b.js": "" }, entries: [] },
      { files: { "a.js": "" }, entries: ["b.js"] },
      { files: { "a.json": "{}" }, entries: ["a.json"] },
      { files: { "a.js": 1 as unknown as string }, entries: [] },
      { files: {}, entries: [], limits: { phaseTicks: 0 } },
      { files: {}, entries: [], seed: -1 },
    ];
    for (const request of bad) {
      expect(() => runner.run(request), JSON.stringify(request)).toThrow(LlmixError);
    }
  });
});

describe("hostile code", () => {
  it("finds no host object, however it looks", async () => {
    const probes = [
      `typeof process`, `typeof globalThis.process`, `typeof globalThis.require`, `typeof globalThis.module`, `typeof setTimeout`, `typeof setInterval`,
      `typeof queueMicrotask`, `typeof fetch`, `typeof XMLHttpRequest`, `typeof WebAssembly`, `typeof std`, `typeof os`, `typeof Buffer`,
      `typeof Function("return this")().process`, `typeof (function () {}).constructor("return process")`,
      `typeof (0, eval)("this").require`, `typeof (async function () {}).constructor("return this")`,
      `typeof Object.getPrototypeOf(function* () {}).constructor("return this")().process`,
    ];
    const r = await runner.run({
      files: { "x.js": probes.map((p, i) => `console.log(${i}, (() => { try { return ${p}; } catch (e) { return "threw " + e.name; } })());`).join("\n") },
      entries: ["x.js"],
    });
    expect(r.status).toBe("ok");
    for (const line of r.output.trim().split("\n")) expect(line, line).toMatch(/^\d+ (undefined|function|threw \w+)$/);
    // The only functions among them are sandbox-made (Function constructors), and what they return has no host in it.
    const globals = await runner.run({ files: { "x.js": `console.log(Object.getOwnPropertyNames(globalThis).sort().join(","));` }, entries: ["x.js"] });
    expect(globals.output).not.toMatch(/\b(process|require|print|std|os|setTimeout|fetch|Buffer|WebAssembly|__)\w*/);
  });

  it("refuses import(), dynamic or static", async () => {
    const r = await runTests(`test("dyn", async () => { await import("node:fs"); });\ntest("data", async () => { await import("data:text/javascript,export default 1"); });`);
    expect(r.tests.map((t) => t.status)).toEqual(["failed", "failed"]);
    expect(r.tests[0]!.message).toMatch(/import\(\) is not available in the sandbox/);
    const stat = await runner.run({ files: { "x.js": `import fs from "fs";` }, entries: ["x.js"] });
    expect(stat.status).toBe("error");
  });

  it("ends an infinite loop with timeout, even inside try/finally, and the next test still runs", async () => {
    const r = await runTests(
      [
        `test("loop", () => { while (true) {} });`,
        `test("catches", () => { for (;;) { try { for (;;) {} } catch (e) {} finally { } } });`,
        `test("after", () => { assert.equal(2 * 2, 4); });`,
      ].join("\n"),
    );
    expect(r.status).toBe("timeout");
    expect(r.tests.map((t) => t.status)).toEqual(["timeout", "timeout", "passed"]);
    expect(r.tests[0]!.message).toMatch(/exceeded its instruction budget .*infinite loop/);
    expect(r.ticks).toBeLessThanOrEqual(2 * DEFAULT_CODE_RUN_LIMITS.phaseTicks + 10);
    await expectHealthy();
  });

  it("stops the whole run at its total budget: later tests are not run", async () => {
    const loops = Array.from({ length: 10 }, (_, i) => `test("loop ${i}", () => { for (;;) {} });`).join("\n");
    const r = await runTests(loops, {}, { limits: { phaseTicks: 100, totalTicks: 350 } });
    expect(r.status).toBe("timeout");
    expect(r.tests.filter((t) => t.message?.startsWith("not run")).length).toBeGreaterThanOrEqual(6);
    expect(r.ticks).toBeLessThanOrEqual(360);
  });

  it("ends a loop at module load time with timeout", async () => {
    const r = await runTests(`require("../src/x");`, { "src/x.js": "while (true) {}" });
    expect(r.status).toBe("timeout");
    expect(r.loadErrors[0]).toMatchObject({ file: "test/t.test.js", status: "timeout" });
  });

  it("ends unbounded allocation with memory", async () => {
    const r = await runTests(
      [
        `test("objects", () => { const a = []; for (;;) a.push({ a: [1, 2, 3] }); });`,
        `test("strings", () => { const a = []; let s = "x"; for (;;) { s += s; a.push(s); } });`,
        `test("buffer", () => { new ArrayBuffer(1024 * 1024 * 1024); });`,
        `test("after", () => { assert.deepEqual([1, 2].map((x) => x * 2), [2, 4]); });`,
      ].join("\n"),
      {},
      { limits: { memoryBytes: 8 * 1024 * 1024 } },
    );
    expect(r.status).toBe("memory");
    const t = byName(r);
    expect(t.objects!.status).toBe("memory");
    expect(t.buffer!.status).toBe("memory");
    // A string that outgrows the interpreter's own string limit fails before the heap limit; either way it stops.
    expect(["memory", "failed"]).toContain(t.strings!.status);
    expect(t.after!.status).toBe("passed");
    await expectHealthy();
  });

  it("ends infinite recursion with a stack overflow error, in code and in the parser", async () => {
    const r = await runTests(
      [
        `test("recursion", () => { function f() { return f() + 1; } f(); });`,
        `test("mutual", () => { const o = { get x() { return o.y; }, get y() { return o.x; } }; o.x; });`,
        `test("parser", () => { eval("(".repeat(100000)); });`,
        `test("json", () => { JSON.parse("[".repeat(100000)); });`,
        `test("nested proxies", () => { let p = {}; for (let i = 0; i < 100000; i++) p = new Proxy(p, {}); p.x; });`,
      ].join("\n"),
    );
    for (const t of r.tests) {
      expect(t.status, t.name).toBe("failed");
      expect(t.message, t.name).toMatch(/stack overflow/);
    }
    await expectHealthy();
  });

  it("caps very long output", async () => {
    const r = await runTests(`test("spam", () => { for (let i = 0; i < 100000; i++) console.log("line " + i + " " + "x".repeat(100)); });`, {}, { limits: { maxOutputChars: 5000 } });
    expect(r.output.length).toBe(5000);
    expect(r.outputTruncated).toBe(true);
    expect(r.tests[0]!.status).toBe("passed");
  });

  it("cannot forge a passing result by patching globals or prototypes", async () => {
    const evil = [
      `Object.defineProperty(Object.prototype, "status", { get() { return "P"; }, configurable: true });`,
      `Array.prototype.push = function () { return 0; };`,
      `Function.prototype.call = function () { return undefined; };`,
      `Function.prototype.apply = function () { return undefined; };`,
      `Object.defineProperty(Error, Symbol.hasInstance, { value: () => true });`,
      `JSON.stringify = () => '"P"';`,
      `Object.is = () => true;`, `Object.keys = () => [];`, `Array.isArray = () => false;`,
      `Promise.prototype.then = function (ok) { ok(); };`,
      `String.prototype.slice = () => "P";`,
      `globalThis.test = () => {};`,
      `module.exports = { double: (x) => x * 3, registered: typeof test + typeof assert };`,
    ].join("\n");
    const r = await runTests(
      [
        `const { double, registered } = require("../src/evil");`,
        `test("equal", () => { assert.equal(double(2), 4); });`,
        `test("deep", () => { assert.deepEqual({ v: [double(1)] }, { v: [2] }); });`,
        `test("async", async () => { await null; assert.equal(double(1), 2); });`,
        `test("no test api in project code", () => { assert.equal(registered, "undefinedundefined"); });`,
      ].join("\n"),
      { "src/evil.js": evil },
    );
    const t = byName(r);
    expect(r.loadErrors, JSON.stringify(r)).toEqual([]);
    expect(t.equal!.status).toBe("failed");
    expect(t.deep!.status).toBe("failed");
    expect(t.async!.status).toBe("failed");
    expect(t["no test api in project code"]!.status).toBe("passed");
  });

  it("restarts its sandbox when a native loop never yields, and the next run works", async () => {
    const local = new CodeRunner({ watchdogSlackMs: 200 });
    try {
      // Each indexOf scans a large array natively; the interpreter barely polls its interrupt handler.
      const r = await local.run({
        files: { "x.js": `const a = new Array(2000000).fill(0); for (;;) a.indexOf(1);` },
        entries: ["x.js"],
        limits: { wallClockMs: 100, phaseTicks: 1_000_000, totalTicks: 1_000_000, memoryBytes: 64 * 1024 * 1024 },
      });
      expect(r.status).toBe("timeout");
      expect(r.message).toMatch(/wall-clock backstop/);
      const after = await local.run({ files: { "t.js": `test("ok", () => {});` }, entries: ["t.js"] });
      expect(after.tests[0]!.status).toBe("passed");
    } finally {
      await local.close();
    }
  });
});

import { getQuickJS } from "quickjs-emscripten";
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
      // Spreading a sparse array copies it natively, element by element, without polling (bounded by the
      // heap, so not metered): each spread takes far longer than the backstop.
      const r = await local.run({
        files: { "x.js": `const a = []; a.length = 3e6; for (;;) [...a];` },
        entries: ["x.js"],
        limits: { wallClockMs: 100, phaseTicks: 1_000_000, totalTicks: 1_000_000, memoryBytes: 64 * 1024 * 1024 },
      });
      expect(r.status).toBe("timeout");
      expect(r.message).toMatch(/wall-clock backstop .* its sandbox was restarted/);
      const after = await local.run({ files: { "t.js": `test("ok", () => {});` }, entries: ["t.js"] });
      expect(after.tests[0]!.status).toBe("passed");
      expect(local.restarts).toBe(1);
    } finally {
      await local.close();
    }
  });
});

describe("built-ins that loop natively", () => {
  // A sparse array of length 4e9+1, an array-like of length 4e9, and strings whose naive search takes
  // (2^22 - 2^12) positions x 2^12 characters.
  const HUGE = `const a = []; a[4e9] = 1; const like = { length: 4e9 };\nconst s = "a".repeat(2 ** 22), t = "a".repeat(2 ** 12) + "b";\n`;
  const unbounded: Record<string, string> = {
    "Array.prototype.indexOf": "a.indexOf(2)",
    "Array.prototype.lastIndexOf": "a.lastIndexOf(2)",
    "Array.prototype.includes": "a.includes(2)",
    "Array.prototype.join": "a.join('')",
    "Array.prototype.toLocaleString": "a.toLocaleString()",
    "Array.prototype.reverse": "a.reverse()",
    "Array.prototype.fill": "a.fill(0)",
    "Array.prototype.copyWithin": "a.copyWithin(0, 1)",
    "Array.prototype.sort": "a.sort()",
    "Array.prototype.toSorted": "a.toSorted()",
    "Array.prototype.splice": "a.splice(0, 1)",
    "Array.prototype.toSpliced": "a.toSpliced(0, 1)",
    "Array.prototype.slice": "a.slice()",
    "Array.prototype.shift": "a.shift()",
    "Array.prototype.unshift": "a.unshift(0)",
    "Array.prototype.with": "a.with(0, 1)",
    "Array.prototype.toReversed": "a.toReversed()",
    "Array.prototype.concat": "[].concat(a)",
    "Array.prototype.flat": "[a].flat()",
    "Array.prototype.flatMap": "[1].flatMap(() => a)",
    "Array.prototype.every": "a.every(() => true)",
    "Array.prototype.some": "a.some(() => false)",
    "Array.prototype.forEach": "a.forEach(() => {})",
    "Array.prototype.map": "a.map((x) => x)",
    "Array.prototype.filter": "a.filter(() => true)",
    "Array.prototype.reduce": "a.reduce((x, y) => y, 0)",
    "Array.prototype.reduceRight": "a.reduceRight((x, y) => y, 0)",
    "Array.prototype.find": "a.find((x) => x === 2)",
    "Array.prototype.findIndex": "a.findIndex((x) => x === 2)",
    "Array.prototype.findLast": "a.findLast((x) => x === 2)",
    "Array.prototype.findLastIndex": "a.findLastIndex((x) => x === 2)",
    "Array.from": "Array.from(like)",
    "TypedArray.from": "Uint8Array.from({ length: 3e7 })",
    "Uint8Array": "new Uint8Array({ length: 3e7 })",
    "String.prototype.indexOf": "s.indexOf(t)",
    "String.prototype.lastIndexOf": "s.lastIndexOf(t)",
    "String.prototype.includes": "s.includes(t)",
    "String.prototype.split": "s.split(t)",
    "String.prototype.replace": "s.replace(t, '')",
    "String.prototype.replaceAll": "s.replaceAll(t, '')",
  };

  it("refuses a call that would visit more than 2^24 elements or positions, with a catchable RangeError", async () => {
    const names = Object.keys(unbounded);
    const source = HUGE + names.map((name) => `test(${JSON.stringify(name)}, () => { ${unbounded[name]}; });`).join("\n") +
      `\ntest("array-like receiver", () => { Array.prototype.indexOf.call(like, 2); });` +
      `\ntest("caught", () => { try { a.indexOf(2); } catch (e) { assert.ok(e instanceof RangeError); } });`;
    const r = await runTests(source);
    const t = byName(r);
    for (const name of names) {
      expect(t[name]!.status, name).toBe("failed");
      expect(t[name]!.message, name).toMatch(new RegExp(`^RangeError: ${name.replace(/\./g, "\\.")}: \\d+ steps \\(elements or string positions to visit\\) are more than one built-in call may take in the sandbox \\(16777216\\)`));
    }
    expect(t["array-like receiver"]!.message).toMatch(/^RangeError: Array\.prototype\.indexOf: 4000000000 steps/);
    expect(t.caught!.status).toBe("passed");
    // Building the two strings costs ~200 ticks; the refused calls cost nothing.
    expect(r.ticks).toBeLessThan(300);
    await expectHealthy();
  });

  it("fails the test that runs a[4e9] = 1; a.indexOf(2) with the message, and runs the others", async () => {
    const r = await runTests(
      [
        `test("before", () => { assert.equal([1, 2].indexOf(2), 1); });`,
        `test("attack", () => { const a = []; a[4e9] = 1; a.indexOf(2); });`,
        `test("after", () => { assert.deepEqual([3, 1, 2].sort(), [1, 2, 3]); });`,
      ].join("\n"),
    );
    expect(r.status).toBe("ok");
    expect(r.tests.map((x) => x.status)).toEqual(["passed", "failed", "passed"]);
    expect(r.tests[1]!.message).toBe(
      "RangeError: Array.prototype.indexOf: 4000000001 steps (elements or string positions to visit) are more than one built-in call may take in the sandbox (16777216) (at test/t.test.js:2)",
    );
    expect(r.ticks).toBeLessThan(10);
  });

  it("charges each call to the budget: a loop of large built-in calls ends at the instruction budget", async () => {
    const loops: Record<string, string> = {
      "sparse indexOf": "const a = []; a.length = 2 ** 24 - 1; for (;;) a.indexOf(2);",
      "array-like join": "const like = { length: 1e5 }; for (;;) Array.prototype.join.call(like, '');",
      "dense includes": "const a = new Array(1e5).fill(0); for (;;) a.includes(1);",
      "typed array sort": "const u = new Float64Array(1e5); for (;;) u.sort();",
      "string split": "const s = 'ab'.repeat(1e5); for (;;) s.split('');",
      "string padEnd": "for (;;) ''.padEnd(1e6, 'ab');",
      "JSON.stringify": "const a = []; a.length = 4e9; JSON.stringify(a);",
      "JSON.parse": "const j = '[' + '0,'.repeat(1e5) + '0]'; for (;;) JSON.parse(j);",
      "Iterator.prototype.drop": "Array.prototype.values.call({ length: 2 ** 53 - 1 }).drop(2 ** 52).next();",
    };
    const names = Object.keys(loops);
    const source = names.map((name) => `test(${JSON.stringify(name)}, () => { ${loops[name]} });`).join("\n") + `\ntest("after", () => {});`;
    const limits = { phaseTicks: 200, totalTicks: 20_000 };
    const r = await runTests(source, {}, { limits });
    const t = byName(r);
    for (const name of names) {
      expect(t[name]!.status, name).toBe("timeout");
      expect(t[name]!.message, name).toMatch(/exceeded its instruction budget \(200 ticks\)/);
    }
    expect(t.after!.status).toBe("passed");
    expect(r.ticks).toBeLessThanOrEqual(names.length * (limits.phaseTicks + 10));
    await expectHealthy();
  });

  it("restarts the sandbox under code that catches the interrupt and runs on, and reports the run so far", async () => {
    // Array.from and the iterator helpers close their iterator on the way out, rethrowing the interrupt as an ordinary error.
    const r = await runTests(
      [
        `function* forever() { for (;;) yield 1; }`,
        `test("first", () => {});`,
        `test("from", () => { for (;;) { try { Array.from(forever(), () => { for (;;) {} }); } catch (e) {} } });`,
        `test("helper", () => { for (;;) { try { forever().map(() => { for (;;) {} }).next(); } catch (e) {} } });`,
      ].join("\n"),
    );
    expect(r.status).toBe("timeout");
    expect(r.tests).toEqual([
      { file: "test/t.test.js", name: "first", status: "passed", message: null },
      { file: "test/t.test.js", name: "from", status: "timeout", message: 'test "from" exceeded its instruction budget (1000 ticks): an infinite loop?' },
      { file: "test/t.test.js", name: "helper", status: "timeout", message: "not run: the run was stopped" },
    ]);
    expect(r.message).toBe('test "from" kept running after it was stopped (it caught the interrupt), so its sandbox was restarted');
    expect(r.ticks).toBeLessThanOrEqual(DEFAULT_CODE_RUN_LIMITS.phaseTicks + 20);
    await expectHealthy();
  });

  it("pays for the length a built-in uses: getters and proxies cannot show it a longer array than they reported", async () => {
    const r = await runTests(
      [
        `test("getter", () => { let n = 0; const o = { get length() { n++; return n > 1 ? 4e9 : 3; } }; assert.equal(Array.prototype.indexOf.call(o, 1), -1); assert.equal(n, 1); });`,
        `test("length valueOf", () => { let n = 0; const o = { length: { valueOf() { n++; return n > 1 ? 4e9 : 2; } } }; assert.equal(Array.prototype.join.call(o, "-"), "-"); assert.equal(n, 1); });`,
        `test("proxy trap", () => { let n = 0; const p = new Proxy([], { get(t, k) { if (k === "length") { n++; return n > 1 ? 4e9 : 0; } return Reflect.get(t, k); } }); assert.equal(Array.prototype.includes.call(p, 1), false); assert.equal(n, 1); });`,
        `test("proxy of a huge array-like", () => { Array.prototype.lastIndexOf.call(new Proxy({ length: 4e9 }, {}), 1); });`,
        `test("revocable proxy", () => { const { proxy } = Proxy.revocable({ length: 4e9 }, {}); [].concat.call(proxy); Array.prototype.fill.call(proxy, 0); });`,
        `test("concat argument grown by a getter", () => { const big = [], a = [1]; Object.defineProperty(a, Symbol.isConcatSpreadable, { get() { big.length = 4e9; return true; } }); [].concat(a, big); });`,
        `test("flat element grown by a getter", () => { const big = []; const a = [1, big]; Object.defineProperty(a, 0, { get() { big.length = 4e9; return 1; } }); a.flat(); });`,
        `test("callbacks and results see the proxy", () => { const p = new Proxy([1, 2], {}); p.forEach((v, i, o) => assert.ok(o === p)); assert.ok(Array.prototype.fill.call(p, 0) === p); assert.deepEqual([...p], [0, 0]); });`,
      ].join("\n"),
    );
    const t = byName(r);
    expect(t.getter!.status).toBe("passed");
    expect(t["length valueOf"]!.status).toBe("passed");
    expect(t["proxy trap"]!.status).toBe("passed");
    expect(t["callbacks and results see the proxy"]!.status).toBe("passed");
    for (const name of ["proxy of a huge array-like", "revocable proxy", "concat argument grown by a getter", "flat element grown by a getter"]) {
      expect(t[name]!.message, name).toMatch(/^RangeError: Array\.prototype\.\w+: 4000000000 steps/);
    }
    expect(r.ticks).toBeLessThan(10);
  });

  it("keeps every metered built-in looking and behaving like the original", async () => {
    const qjs = await getQuickJS();
    const vm = qjs.newContext();
    try {
      const raw = vm.unwrapResult(vm.evalCode(FINGERPRINT));
      const expected = vm.getString(raw);
      raw.dispose();
      const r = await runner.run({ files: { "x.js": `console.log(${FINGERPRINT});` }, entries: ["x.js"] });
      expect(r.status).toBe("ok");
      expect(r.output).toBe(`${expected}\n`);
    } finally {
      vm.dispose();
    }
  });

  it("cannot be bypassed by patching the intrinsics the meters use", async () => {
    const r = await runTests(
      [
        `Reflect.apply = () => 0; Reflect.get = () => 0; Reflect.construct = () => ({});`,
        `Function.prototype.apply = () => 0; Function.prototype.call = () => 0; Function.prototype.bind = () => () => 0;`,
        `Object.getOwnPropertyDescriptor = () => ({ value: 0 }); Object.getPrototypeOf = () => null; Object.defineProperty = () => {}; Array.isArray = () => true;`,
        `WeakSet.prototype.has = () => false; WeakMap.prototype.get = () => undefined; Math.floor = () => 0;`,
        `Object.prototype.get = undefined; Object.prototype.value = 0;`,
        `test("still refused", () => { const a = []; a[4e9] = 1; a.indexOf(2); });`,
        `test("proxy still counted", () => { new Proxy({ length: 4e9, indexOf: Array.prototype.indexOf }, {}).indexOf(2); });`,
        `test("no original behind a wrapper", () => { const f = Array.prototype.indexOf; delete Array.prototype.indexOf; assert.equal([].indexOf, undefined); assert.ok(f.toString().includes("native code")); });`,
      ].join("\n"),
    );
    const t = byName(r);
    expect(r.loadErrors).toEqual([]);
    expect(t["still refused"]!.message).toMatch(/^RangeError: Array\.prototype\.indexOf: 4000000001 steps/);
    expect(t["proxy still counted"]!.message).toMatch(/^RangeError: Array\.prototype\.indexOf: 4000000000 steps/);
    expect(t["no original behind a wrapper"]!.status).toBe("passed");
  });
});

/**
 * What sandboxed code can learn about the metered built-ins without timing them: names, lengths, source
 * text, property attributes, constructibility, and results and errors for ordinary and edge-case calls.
 */
const FINGERPRINT = String.raw`(function () {
  var out = [];
  function about(owner, key) {
    var d = Object.getOwnPropertyDescriptor(owner, key), f = d.value, made;
    try { new f(); made = "constructs"; } catch (e) { made = e.constructor.name + ": " + e.message; }
    return [key, d.writable, d.enumerable, d.configurable, f.name, f.length, String(f), "prototype" in f, made].join(" | ");
  }
  var owners = [Array.prototype, String.prototype, Object.getPrototypeOf(Uint8Array.prototype), JSON, Iterator.prototype, Function.prototype, Array,
    Object.getPrototypeOf(Uint8Array), Proxy];
  owners.forEach(function (owner) {
    out.push(Object.getOwnPropertyNames(owner).join(","));
    Object.getOwnPropertyNames(owner).forEach(function (key) { if (typeof Object.getOwnPropertyDescriptor(owner, key).value === "function") out.push(about(owner, key)); });
  });
  ["Proxy", "Uint8Array", "Float64Array", "BigInt64Array"].forEach(function (key) {
    var C = globalThis[key];
    out.push(about(globalThis, key) + " | " + (Object.getPrototypeOf(C) === Object.getPrototypeOf(Uint8Array)) + " | " + (C.prototype && C.prototype.constructor === C));
  });
  var calls = [
    function () { return [1, 2, 3].indexOf(2, -1) + "," + [NaN].includes(NaN) + "," + [NaN].indexOf(NaN) + "," + ["a", "b"].lastIndexOf("a"); },
    function () { return Array.prototype.join.call({ length: 3, 0: "a", 2: "c" }, "-") + "," + [3, 1, 10, 2].sort() + "," + [1, [2, [3]]].toString(); },
    function () { return [1, 2, 3].toSpliced(1, 1, 9, 9) + "|" + [1, 2, 3].with(-1, 0) + "|" + [1, 2, 3].splice(1) + "|" + [1, 2].toReversed(); },
    function () { var a = [1, 2, 3]; return a.unshift(0) + "," + a.shift() + "," + a.copyWithin(0, 1) + "," + a.fill(7, 2) + "," + a.reverse(); },
    function () { return JSON.stringify([1, [2, undefined, function () {}], { a: undefined, b: new Date(0), c: { toJSON: function () { return "J"; } } }], null, 1); },
    function () { return JSON.stringify({ b: 1, a: 2, 1: 3 }, ["a", "1"]) + JSON.stringify({ a: 1 }, function (k, v) { return typeof v === "number" ? v + 1 : v; }); },
    function () { return JSON.stringify(JSON.parse('{"a":[1,{"b":null}]}', function (k, v) { return k === "b" ? 2 : v; })); },
    function () { return ["a,b,,c".split(",", 3), "abc".split(""), "abc".split().length, "abc".split(undefined, 0).length, "a1b2".split(/\d/)].join("|"); },
    function () { return ["aaa".replace("a", "$&$&$'"), "aXa".replace(/a/g, "b"), "aXa".replaceAll("a", function (m, i) { return i; }), "x".replaceAll("", "-")].join("|"); },
    function () { return "abcabc".lastIndexOf("c", 4) + "," + "abc".indexOf("", 10) + "," + "abc".includes("") + "," + "ab".repeat(2) + "," + "5".padStart(3, "0") + "," + "a".padEnd(4, "xy"); },
    function () { return [1, [2, [3, [4]]]].flat(2).length + "," + [[1], [2]].flatMap(function (x) { return x; }) + "," + [1, [2, [3]]].flat(Infinity); },
    function () { var r = [].concat(1, [2, , 4], { length: 1, 0: 3, [Symbol.isConcatSpreadable]: true }, "s"); return r.length + "," + (2 in r) + "," + r; },
    function () { return Array.from("héllo").length + "," + Array.from(new Set([1, 2])) + "," + Array.from({ length: 2, 0: "x" }) + "," + Array.from([1, , 3]); },
    function () { return Uint8Array.from({ length: 2, 0: 7 }) + "," + new Uint8Array(new Set([1, 2])) + "," + new Int16Array([1, 2]).reverse() + "," + new Float64Array([3, 1, 2]).sort() + "," + new Uint8Array(new ArrayBuffer(4), 1, 2).length; },
    function () { var u = new Uint8Array(4); u.set([1, 2], 1); return u + "," + u.indexOf(2) + "," + u.includes(9) + "," + u.slice(1, 3) + "," + u.join("-") + "," + u.toSorted() + "," + u.with(0, 9); },
    function () { return [...[1, 2, 3].values().drop(1)] + "," + [...[1, 2, 3].values().map(function (x) { return x * 2; }).drop(2)]; },
    function () { class A extends Array {} var a = new A(); a.push(1, 2); return [a.map(function (x) { return x; }) instanceof A, a.concat([3]) instanceof A, a.flat() instanceof A, a.filter(Boolean).constructor.name].join(); },
    function () { class U extends Uint8Array {} return [new U(2) instanceof U, new U(2) instanceof Uint8Array, new U(2).slice() instanceof U, U.from([1]) instanceof U, U.BYTES_PER_ELEMENT].join(); },
    function () { var p = new Proxy([1, 2], {}), r = Proxy.revocable({}, {}); return [Array.isArray(p), p.map(function (x) { return x; }), typeof r.revoke, p instanceof Array].join(); },
    function () { var log = []; var o = { get length() { log.push("len"); return 2; }, get 0() { log.push("0"); return "a"; } }; Array.prototype.join.call(o); Array.prototype.map.call(o, function (v, i, oo) { log.push(oo === o); }); return log.join(); },
    function () { return Function.prototype.toString.call(function f(a) { return a; }) + Function.prototype.toString.call(class { }) + (function () {}).bind(null).toString(); },
    function () { return "x".replace({ [Symbol.replace]: function (s, r) { return s + r; } }, "y") + "x".split({ [Symbol.split]: function (s, l) { return [s, l]; } }, 2); },
  ];
  var failures = [
    function () { [].values().drop(-1); }, function () { Proxy({}, {}); }, function () { Uint8Array(1); }, function () { new Proxy(1, {}); },
    function () { var r = Proxy.revocable({}, {}); r.revoke(); r.proxy.x; }, function () { Array.prototype.indexOf.call(null); },
    function () { String.prototype.indexOf.call(undefined, "a"); }, function () { "a".indexOf(Symbol()); }, function () { JSON.parse("{x"); },
    function () { "a".repeat(-1); }, function () { "a".repeat(2 ** 30); }, function () { [].reduce(function () {}); }, function () { [].map(1); },
    function () { [].flatMap(1); }, function () { "a".replaceAll(/a/, "b"); }, function () { "a".includes(/a/); }, function () { [1].toSorted(1); },
    function () { new Uint8Array(2).set([1, 2, 3]); }, function () { Uint8Array.from.call(Object, [1]); }, function () { [1].forEach(function () { throw new Error("boom"); }); },
    function () { JSON.stringify({ a: 1n }); }, function () { var o = {}; o.o = o; JSON.stringify(o); }, function () { [].concat.call(undefined); },
  ];
  calls.forEach(function (f, i) { out.push("call " + i + ": " + f()); });
  failures.forEach(function (f, i) { try { f(); out.push("failure " + i + ": none"); } catch (e) { out.push("failure " + i + ": " + e.constructor.name + ": " + e.message); } });
  return out.join("\n");
})()`;

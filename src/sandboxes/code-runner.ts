/**
 * The code-execution sandbox (DESIGN §3): agent-written JavaScript and its unit tests run in QuickJS, a
 * JavaScript interpreter compiled to WebAssembly (quickjs-emscripten), never in the host's V8.
 *
 * What the sandboxed code sees: the ECMAScript built-ins, a minimal CommonJS `require` over the files of
 * the request (implemented inside the sandbox), `console` (captured, size-capped), and in test files
 * `test(name, fn)`, `describe(name, fn)` and an `assert` module. Nothing of the host exists there: no
 * `process`, no file system, no network, no timers, no `import()`.
 *
 * Determinism. The same request gives the same result on every run and machine:
 * - time limits are instruction budgets, not deadlines: QuickJS calls an interrupt handler once every
 *   10,000 branches and calls of bytecode, and the handler counts the calls ("ticks");
 * - built-ins run their loops natively, without polling, so every built-in whose work grows with an input
 *   the heap does not bound (the length of a sparse array or an array-like, a string search, a sort)
 *   first pays for that work in ticks, and no single call may take more than 2^24 steps (a catchable
 *   RangeError); see "metered built-ins" in the prelude;
 * - a generous wall-clock backstop ends only what ticks cannot see (work inside one bytecode operation or
 *   built-in call on a large, heap-bounded input) and reports `timeout` as well;
 * - `Date.now()` / `new Date()` read the request's virtual time, every local-time method of Date is its
 *   UTC twin (the host's time zone never leaks in), and `Math.random` is a seeded stream;
 * - memory and stack are capped by QuickJS itself (setMemoryLimit, setMaxStackSize).
 *
 * Isolation. The interpreter runs in a worker thread with a large native stack: deeply recursive code
 * (parser nesting, JSON, proxies) hits QuickJS's own stack limit long before the thread's, so it ends as
 * a catchable "stack overflow" instead of a host RangeError. If anything still goes wrong (a native loop
 * that stops polling the interrupt handler, code that catches an interrupt a built-in rethrew as an
 * ordinary error, a crash of the interpreter) the host terminates the worker, answers the run with
 * `timeout` or `error` (and the tests reported so far), and starts a fresh worker for the next run. The WebAssembly
 * module is loaded once per worker; every run gets a fresh runtime and context, so nothing leaks between
 * runs.
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { ValidationError } from "../core/errors.js";

/** How a run ended. `ok`: every phase completed (tests may still have failed). */
export type CodeRunStatus = "ok" | "error" | "timeout" | "memory";
/** How one test ended. */
export type TestStatus = "passed" | "failed" | "timeout" | "memory";

/** Resource limits of one run. Budgets count interrupt-handler calls ("ticks"), which is deterministic. */
export interface CodeRunLimits {
  /** Ticks one phase may use: loading one entry file, or running one test. QuickJS polls once every 10,000 branches and calls. */
  phaseTicks: number;
  /** Ticks the whole run may use; tests left when it is spent are reported as `timeout` without running. */
  totalTicks: number;
  /** Heap limit of the interpreter, in bytes. */
  memoryBytes: number;
  /** Stack limit of the interpreter, in bytes (recursion deeper than this throws "stack overflow"). */
  stackBytes: number;
  /** Characters of console output kept; the rest is dropped and `outputTruncated` set. */
  maxOutputChars: number;
  /** Wall-clock backstop of the whole run, in ms (only pathological code reaches it; reported as `timeout`). */
  wallClockMs: number;
}

/** Defaults: a test may run ~0.1 s of tight loop, a run ~0.5 s; 32 MiB heap; ~1,400 frames of plain recursion. */
export const DEFAULT_CODE_RUN_LIMITS: Readonly<CodeRunLimits> = Object.freeze({
  phaseTicks: 1_000,
  totalTicks: 6_000,
  memoryBytes: 32 * 1024 * 1024,
  stackBytes: 256 * 1024,
  maxOutputChars: 64 * 1024,
  // The backstop is the one limit that depends on the machine, so it must never end a run the budget
  // allows. A run that spends all 6,000 ticks takes 0.5 s in the tightest loop and ~3 s in loops that
  // carry more bytecode per branch (metered built-ins cost no more per tick), on an idle machine; a loaded
  // 2-core machine is several times slower. What only the backstop ends is work the ticks do not see, and
  // that work is bounded by the heap: a single bytecode operation or built-in call on a large input
  // (spreading a huge sparse array, converting a huge BigInt) or long straight-line code in a loop. So it
  // stays at 10 s: lower, a legitimate run on a loaded machine could end differently from run to run.
  wallClockMs: 10_000,
});

/** Largest number of files in one request. */
export const MAX_FILES = 1_000;
/** Largest total size of a request's files, in characters. */
export const MAX_SOURCE_CHARS = 8 * 1024 * 1024;

/** One run: a set of files (a small project) and the entry files to load, in order. */
export interface CodeRunRequest {
  /** Project-relative paths (e.g. "src/strings.js") to source text. `.js` files are CommonJS modules; `.json` files can be required too. */
  files: Readonly<Record<string, string>>;
  /** Files to load, in order. Test files register tests with `test(name, fn)`; the tests run after every entry loaded. */
  entries: readonly string[];
  /** What `Date.now()` and `new Date()` return (virtual time, epoch ms). Default 0. */
  nowMs?: number;
  /** Seed of `Math.random`. Default 0. */
  seed?: number;
  /** Overrides of the default limits. */
  limits?: Partial<CodeRunLimits>;
}

/** The outcome of one registered test. */
export interface TestOutcome {
  file: string;
  name: string;
  status: TestStatus;
  /** Why it did not pass (assertion message, error, limit); null when it passed. */
  message: string | null;
}

/** An entry file that could not be loaded (syntax error, exception at load, limit). Its tests do not run. */
export interface LoadFailure {
  file: string;
  status: "error" | "timeout" | "memory";
  message: string;
}

/** Everything a run produced. Equal requests give equal results. */
export interface CodeRunResult {
  status: CodeRunStatus;
  tests: TestOutcome[];
  loadErrors: LoadFailure[];
  /** Console output (console.log/info/warn/error/debug), capped at `maxOutputChars`. */
  output: string;
  outputTruncated: boolean;
  /** The first abnormal event (limit hit, load failure, sandbox failure), or null. */
  message: string | null;
  /** Interrupt-handler calls used: a deterministic measure of work done. */
  ticks: number;
}

const PATH = /^(?!\/)(?!.*(?:^|\/)\.\.?(?:\/|$))[A-Za-z0-9_.@+-]+(?:\/[A-Za-z0-9_.@+-]+)*$/;

/** Whether a path is accepted as a file of a request (relative, no "." or ".." segments, plain characters). */
export function isRunnablePath(path: string): boolean {
  return PATH.test(path) && path.length <= 512;
}

/** Check a request and fill in the limits; throws ValidationError("invalid_argument") for a malformed one. */
export function normalizeRequest(request: CodeRunRequest): Required<Omit<CodeRunRequest, "limits">> & { limits: CodeRunLimits } {
  const bad = (message: string): never => {
    throw new ValidationError("invalid_argument", `code run: ${message}`);
  };
  if (request === null || typeof request !== "object") bad("request must be an object");
  const files = request.files;
  if (files === null || typeof files !== "object" || Array.isArray(files)) bad("files must be an object of path -> source");
  const paths = Object.keys(files);
  if (paths.length > MAX_FILES) bad(`too many files (${paths.length}; the limit is ${MAX_FILES})`);
  let chars = 0;
  for (const path of paths) {
    if (!isRunnablePath(path)) bad(`invalid file path "${path.slice(0, 80)}": use relative paths like src/util.js, without "." or ".." segments`);
    const source = files[path];
    if (typeof source !== "string") bad(`file "${path}" must be a string`);
    chars += (source as string).length;
  }
  if (chars > MAX_SOURCE_CHARS) bad(`the files total ${chars} characters; the limit is ${MAX_SOURCE_CHARS}`);
  if (!Array.isArray(request.entries)) bad("entries must be an array of file paths");
  for (const entry of request.entries) {
    if (typeof entry !== "string" || !Object.prototype.hasOwnProperty.call(files, entry)) bad(`entry "${String(entry)}" is not one of the files`);
    if (!entry.endsWith(".js")) bad(`entry "${entry}" must be a .js file`);
  }
  const nowMs = request.nowMs ?? 0;
  if (!Number.isFinite(nowMs) || Math.abs(nowMs) > 8.64e15) bad("nowMs must be a finite time in epoch ms");
  const seed = request.seed ?? 0;
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) bad("seed must be an integer in [0, 4294967295]");
  const limits: CodeRunLimits = { ...DEFAULT_CODE_RUN_LIMITS, ...request.limits };
  for (const [key, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 1) bad(`limits.${key} must be an integer >= 1`);
  }
  if (limits.memoryBytes < 1024 * 1024) bad("limits.memoryBytes must be at least 1 MiB");
  if (limits.stackBytes < 16 * 1024 || limits.stackBytes > 2 * 1024 * 1024) bad("limits.stackBytes must lie in [16 KiB, 2 MiB]");
  return { files, entries: [...request.entries], nowMs, seed, limits };
}

// ---- the in-sandbox prelude ----------------------------------------------------------------------------

/**
 * JavaScript evaluated first in every fresh context; its completion value is `setup(print, nowMs, seed,
 * maxOutput, memoryBytes)`, which installs the virtual clock, the seeded Math.random and the metered
 * built-ins and returns the harness. It captures every intrinsic it needs before any project code runs and
 * keeps its state in closures and null-prototype objects, so project code that patches globals or
 * prototypes (Object.prototype setters, Array.prototype iterators, Function.prototype.call,
 * Symbol.hasInstance, JSON) cannot forge a result or reach a built-in around its meter.
 */
export const PRELUDE = String.raw`(function () {
  "use strict";
  var G = globalThis;
  var O = Object, keys = O.keys, is = O.is, create = O.create, defProp = O.defineProperty, getProto = O.getPrototypeOf;
  var setProto = O.setPrototypeOf, freeze = O.freeze;
  var hasOwn = O.prototype.hasOwnProperty, isArray = Array.isArray, apply = Reflect.apply;
  var Str = String, Num = Number, ErrorC = Error, TypeErrorC = TypeError, RangeErrorC = RangeError;
  var SyntaxErrorC = SyntaxError, InternalErrorC = typeof InternalError === "function" ? InternalError : ErrorC;
  var hasInstance = Function.prototype[Symbol.hasInstance];
  var jsonStringify = JSON.stringify;
  var then = Promise.prototype.then;
  var sSlice = String.prototype.slice, sIndexOf = String.prototype.indexOf, sLastIndexOf = String.prototype.lastIndexOf;
  var sSplit = String.prototype.split, sPadStart = String.prototype.padStart, rExec = RegExp.prototype.exec, rTest = RegExp.prototype.test;
  var floor = Math.floor, imul = Math.imul;
  var RealDate = Date, DP = Date.prototype, UTC = Date.UTC, realParse = Date.parse;
  var getTime = DP.getTime, hostOffset = DP.getTimezoneOffset, toISO = DP.toISOString;
  var uYear = DP.getUTCFullYear, uMonth = DP.getUTCMonth, uDate = DP.getUTCDate, uDay = DP.getUTCDay;
  var uHours = DP.getUTCHours, uMinutes = DP.getUTCMinutes, uSeconds = DP.getUTCSeconds;

  function slice(s, a, b) { return apply(sSlice, s, b === undefined ? [a] : [a, b]); }
  function indexOf(s, t) { return apply(sIndexOf, s, [t]); }
  function pad(n, w) { return apply(sPadStart, Str(n), [w, "0"]); }
  function isInstance(C, v) { try { return apply(hasInstance, C, [v]); } catch (e) { return false; } }
  function isDate(v) {
    if (v === null || typeof v !== "object") return false;
    try { apply(getTime, v, []); return true; } catch (e) { return false; }
  }

  function quote(s) {
    var q = jsonStringify(s);
    return q.length > 300 ? slice(q, 0, 297) + '..."' : q;
  }

  function fmt(v, depth) {
    var t = typeof v;
    if (v === null) return "null";
    if (t === "undefined") return "undefined";
    if (t === "string") return quote(v);
    if (t === "number") return is(v, -0) ? "-0" : Str(v);
    if (t === "bigint") return Str(v) + "n";
    if (t === "boolean") return v ? "true" : "false";
    if (t === "symbol") return "Symbol()";
    if (t === "function") return "[Function]";
    if (isDate(v)) { var ms = apply(getTime, v, []); return ms !== ms ? "Invalid Date" : "Date(" + isoOf(ms) + ")"; }
    if (depth > 3) return isArray(v) ? "[Array]" : "[Object]";
    var out, i, n;
    if (isArray(v)) {
      n = v.length;
      out = "[";
      for (i = 0; i < n && i < 30; i++) out += (i ? ", " : "") + fmt(v[i], depth + 1);
      if (n > 30) out += ", ... " + (n - 30) + " more";
      return out + "]";
    }
    var ks = keys(v);
    n = ks.length;
    if (n === 0) return "{}";
    out = "{ ";
    for (i = 0; i < n && i < 30; i++) {
      var k = ks[i];
      out += (i ? ", " : "") + (apply(rTest, /^[A-Za-z_$][A-Za-z0-9_$]*$/, [k]) ? k : quote(k)) + ": " + fmt(v[k], depth + 1);
    }
    if (n > 30) out += ", ... " + (n - 30) + " more";
    return out + " }";
  }
  function show(v) {
    try { var s = fmt(v, 0); return s.length > 1000 ? slice(s, 0, 997) + "..." : s; } catch (e) { return "[a value that cannot be printed]"; }
  }

  // ---- Date: virtual time, UTC everywhere ----
  var DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  var MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  function isoOf(ms) { return apply(toISO, new RealDate(ms), []); }
  function parts(d) {
    return { y: apply(uYear, d, []), mo: apply(uMonth, d, []), d: apply(uDate, d, []), wd: apply(uDay, d, []),
      h: apply(uHours, d, []), mi: apply(uMinutes, d, []), s: apply(uSeconds, d, []) };
  }
  function dateText(d) { var p = parts(d); return DAYS[p.wd] + " " + MONTHS[p.mo] + " " + pad(p.d, 2) + " " + (p.y < 0 ? "-" + pad(-p.y, 6) : pad(p.y, 4)); }
  function timeText(d) { var p = parts(d); return pad(p.h, 2) + ":" + pad(p.mi, 2) + ":" + pad(p.s, 2) + " GMT+0000 (Coordinated Universal Time)"; }
  var ISO = /^([+-]\d{6}|\d{4})(?:-(\d{2})(?:-(\d{2}))?)?(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;
  var ZONE = /(?:\bGMT\b|\bUTC\b|\bZ$|[+-]\d{2}:?\d{2}\s*(?:\(.*\))?$)/i;
  function parseDate(s) {
    s = Str(s);
    var m = apply(rExec, ISO, [s]);
    if (m) {
      if (m[8]) return realParse(s);
      var ms = m[7] ? Num(slice(m[7] + "00", 0, 3)) : 0;
      var year = Num(m[1]);
      var month = m[2] ? Num(m[2]) - 1 : 0, day = m[3] ? Num(m[3]) : 1;
      var h = m[4] ? Num(m[4]) : 0, mi = m[5] ? Num(m[5]) : 0, sec = m[6] ? Num(m[6]) : 0;
      if (month > 11 || day < 1 || day > 31 || h > 24 || mi > 59 || sec > 59) return NaN;
      return UTC(year, month, day, h, mi, sec, ms);
    }
    if (apply(rTest, ZONE, [s])) return realParse(s);
    // Other formats without a zone: the interpreter reads them in the host's zone; shift that away.
    var local = realParse(s);
    if (local !== local) return NaN;
    return local - apply(hostOffset, new RealDate(local), []) * 60000;
  }

  function install(nowMs, seed) {
    var NOW = nowMs;
    function Date(a0, a1) {
      if (new.target === undefined) { var d0 = new RealDate(NOW); return dateText(d0) + " " + timeText(d0); }
      var n = arguments.length, t;
      if (n === 0) t = NOW;
      else if (n === 1) {
        if (isDate(a0)) t = apply(getTime, a0, []);
        else if (typeof a0 === "string") t = parseDate(a0);
        else if (a0 !== null && typeof a0 === "object") { var p = a0.valueOf(); t = typeof p === "string" ? parseDate(p) : Num(p); }
        else t = Num(a0);
      } else {
        var args = [], i;
        for (i = 0; i < n && i < 7; i++) defineElement(args, i, Num(arguments[i]));
        t = apply(UTC, undefined, args);
      }
      var d = new RealDate(t);
      if (new.target !== Date) setProto(d, new.target.prototype);
      return d;
    }
    Date.prototype = DP;
    defProp(DP, "constructor", { value: Date, writable: true, configurable: true });
    Date.now = function now() { return NOW; };
    Date.UTC = UTC;
    Date.parse = function parse(s) { return parseDate(s); };
    var names = ["FullYear", "Month", "Date", "Hours", "Minutes", "Seconds", "Milliseconds"];
    for (var i = 0; i < names.length; i++) {
      DP["get" + names[i]] = DP["getUTC" + names[i]];
      DP["set" + names[i]] = DP["setUTC" + names[i]];
    }
    DP.getDay = DP.getUTCDay;
    DP.getTimezoneOffset = function getTimezoneOffset() { apply(getTime, this, []); return 0; };
    DP.getYear = function getYear() { return apply(uYear, this, []) - 1900; };
    DP.toString = function toString() { var t = apply(getTime, this, []); return t !== t ? "Invalid Date" : dateText(this) + " " + timeText(this); };
    DP.toDateString = function toDateString() { var t = apply(getTime, this, []); return t !== t ? "Invalid Date" : dateText(this); };
    DP.toTimeString = function toTimeString() { var t = apply(getTime, this, []); return t !== t ? "Invalid Date" : timeText(this); };
    DP.toLocaleString = DP.toString;
    DP.toLocaleDateString = DP.toDateString;
    DP.toLocaleTimeString = DP.toTimeString;
    G.Date = Date;

    // Math.random: mulberry32 from the request's seed.
    var state = seed | 0;
    Math.random = function random() {
      state = (state + 0x6d2b79f5) | 0;
      var r = imul(state ^ (state >>> 15), 1 | state);
      r = (r + imul(r ^ (r >>> 7), 61 | r)) ^ r;
      return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
    };
  }

  // ---- metered built-ins ----
  // QuickJS polls the interrupt handler from bytecode (branches and calls), never inside a built-in's own
  // loop: "a[4e9] = 1; a.indexOf(2)" would visit four billion holes on one tick, out of reach of any
  // instruction budget, and a loop that calls a built-in scanning a large input gets each scan almost free.
  // So every built-in whose work grows with an input the heap cap does not bound (the length of a sparse
  // array or an array-like, a product of string lengths, n log n, a count of items to skip) is replaced by a
  // wrapper that pays for the work first, in bytecode the budget counts: one iteration of an empty loop per
  // step (an element or a string position the built-in may visit). A call that would take more than
  // MAX_STEPS steps throws a RangeError before it starts. A metered call that returns a string also pays for
  // its characters, and one that runs out of memory pays for the heap it filled, so a loop that catches the
  // error and retries gets no work for free. Built-ins that call sandboxed code for every element they
  // visit (iterators in for-of, comparators, replacer functions) are polled through those calls.
  // A wrapper has the name, length, property attributes and source text of the built-in it replaces, and
  // the built-ins stay in this closure: sandboxed code can replace a wrapper, never call around it.

  // A step is one iteration of an empty for loop: two of the 10,000 branches that make a tick, so a tick buys
  // 5,000 steps. It takes about as long as a built-in takes to visit one hole of a sparse array, or to copy
  // or compare CHARS_PER_STEP characters.
  // MAX_STEPS, 2^24, is more elements than a 32 MiB heap holds densely (8-byte values), so only sparse
  // arrays, array-likes and byte arrays reach it, and more steps than a test's default budget (1,000 ticks,
  // 5 million steps) pays for anyway.
  var MAX_STEPS = 16777216;
  var CHARS_PER_STEP = 8;
  var MAX_LENGTH = 9007199254740991;
  var RealProxy = Proxy, bind = Function.prototype.bind, fnToString = Function.prototype.toString;
  var gOPD = O.getOwnPropertyDescriptor, reflectGet = Reflect.get, reflectSet = Reflect.set, construct = Reflect.construct;
  var setHas = WeakSet.prototype.has, setAdd = WeakSet.prototype.add, mapGet = WeakMap.prototype.get, mapSet = WeakMap.prototype.set;
  var proxies = new WeakSet(), originals = new WeakMap();
  var AP = Array.prototype, SP = String.prototype, TA = getProto(Uint8Array), TAP = TA.prototype, IP = Iterator.prototype;
  var typedLength = gOPD(TAP, "length").get, regexpSource = gOPD(RegExp.prototype, "source").get;
  var nativeFlatMap = AP.flatMap, iteratorMap = IP.map;
  var symMatch = Symbol.match, symSplit = Symbol.split, symReplace = Symbol.replace, symIterator = Symbol.iterator;
  var symSpreadable = Symbol.isConcatSpreadable;
  var oomSteps = 0, meteredParse;

  function isProxy(v) { return apply(setHas, proxies, [v]); }
  function isObject(v) { return v !== null && (typeof v === "object" || typeof v === "function"); }
  function text(v) {
    if (typeof v === "symbol") throw new TypeErrorC("cannot convert symbol to string");
    return typeof v === "string" ? v : Str(v);
  }
  function toLength(v) { var n = +v; if (!(n > 0)) return 0; n = floor(n); return n > MAX_LENGTH ? MAX_LENGTH : n; }
  function toIntegerOrInfinity(v) { var n = +v; if (n !== n || n === 0) return 0; return n < 0 ? -floor(-n) : floor(n); }
  function isOom(e) {
    try { return isInstance(InternalErrorC, e) && e.message === "out of memory"; } catch (x) { return false; }
  }

  function burn(steps) { for (var i = 0; i < steps; i++) {} }
  function refuse(name, steps) {
    if (steps > MAX_STEPS) throw new RangeErrorC(name + ": " + steps + " steps (elements or string positions to visit) are more than one built-in call may take in the sandbox (" + MAX_STEPS + ")");
  }
  function pay(name, steps) { refuse(name, steps); burn(steps); }
  /** Call a built-in: a string result pays for its characters, running out of memory for the heap it filled. */
  function run(native, self, args) {
    var result;
    try { result = apply(native, self, args); } catch (e) { if (isOom(e)) burn(oomSteps); throw e; }
    if (typeof result === "string") burn(floor(result.length / CHARS_PER_STEP));
    return result;
  }

  /** The length a built-in reads from object o, if reading it runs no sandboxed code (getter, trap, valueOf); else -1. */
  function pureLength(o) {
    if (isProxy(o)) return -1;
    if (isArray(o)) return o.length;
    for (var p = o; p !== null; p = getProto(p)) {
      if (isProxy(p)) return -1;
      var d = gOPD(p, "length");
      if (d === undefined) continue;
      if (!apply(hasOwn, d, ["value"])) return d.get === typedLength ? typedLengthOf(o) : -1;
      var v = d.value, t = typeof v;
      if (isObject(v)) return -1;
      return t === "symbol" || t === "bigint" ? 0 : toLength(v);
    }
    return 0;
  }
  function typedLengthOf(o) { try { return apply(typedLength, o, []); } catch (e) { return -1; } }
  /** Whether o has an iterator method, if looking it up runs no sandboxed code; else null. */
  function pureIterable(o) {
    for (var p = o; p !== null; p = getProto(p)) {
      if (isProxy(p)) return null;
      var d = gOPD(p, symIterator);
      if (d === undefined) continue;
      return apply(hasOwn, d, ["value"]) ? d.value !== undefined && d.value !== null : null;
    }
    return false;
  }

  /**
   * A stand-in for o, to run a built-in on when reading o's length runs sandboxed code: every length the
   * built-in reads goes through the view, which reads it from o, pays for it if it is more than was paid
   * for already, and hands the same value on. So the length paid for is the length used. Everything else
   * reaches o, with o as the receiver.
   */
  function payingView(name, o, steps, args) {
    var handler = create(null), view, paid = 0;
    handler.get = function (t, key, receiver) {
      var value = reflectGet(t, key, receiver === view ? o : receiver);
      if (key !== "length") return value;
      var len = toLength(value);
      if (len > paid) { pay(name, steps(len, args) - steps(paid, args)); paid = len; }
      return len;
    };
    handler.set = function (t, key, value, receiver) { return reflectSet(t, key, value, receiver === view ? o : receiver); };
    view = new RealProxy(o, handler);
    return view;
  }
  /** The callback to give a built-in running on view (or on o itself when view is null): fn, seeing o, never the view. */
  function unviewed(fn, view, o) {
    if (view === null || typeof fn !== "function") return fn;
    return function () {
      for (var i = 0; i < arguments.length; i++) if (arguments[i] === view) arguments[i] = o;
      return apply(fn, this, arguments);
    };
  }
  /** flatMap's callback: unviewed, and an array it returns is paid for before the built-in spreads it. */
  function flattening(fn, view, o, name) {
    var f = unviewed(fn, view, o);
    if (typeof f !== "function") return f;
    return function () {
      var r = apply(f, this, arguments);
      if (isProxy(r)) return payingView(name, r, perElement, []);
      if (isArray(r)) pay(name, r.length);
      return r;
    };
  }

  function perElement(len) { return len; }
  function perElementAndItem(len, args) { return len + args.length; }
  function searching(len, args) { var v = args[0]; return typeof v === "string" ? len * (1 + floor(v.length / CHARS_PER_STEP)) : len; }
  function sorting(len) { var bits = 1; for (var n = len; n > 1; n = floor(n / 2)) bits++; return len * bits; }
  /** A naive string search: every position, each compared for up to the length of the searched string. */
  function searchSteps(n, m) { return m > n ? 0 : (n - m + 1) * (1 + floor(m / CHARS_PER_STEP)); }

  /** Put wrapper in place of owner[key], with the name, length, attributes and source text of the built-in there. */
  function replaceBuiltin(owner, key, wrapper) {
    var d = gOPD(owner, key), native = d.value;
    defProp(wrapper, "name", { value: native.name, configurable: true });
    defProp(wrapper, "length", { value: native.length, configurable: true });
    apply(mapSet, originals, [wrapper, native]);
    d.value = wrapper;
    defProp(owner, key, d);
  }
  /** A method named key (no prototype, not a constructor, like a built-in method) that runs body(this, arguments). */
  function method(key, body) {
    var holder = { [key]() { return body(this, arguments); } };
    return holder[key];
  }

  /** Array.prototype[key], paying steps(length, arguments) before it runs; adapt prepares its callback. */
  function meterArrayMethod(key, steps, adapt) {
    var native = AP[key], name = "Array.prototype." + key;
    replaceBuiltin(AP, key, method(key, function (self, args) {
      if (self === null || self === undefined) return apply(native, self, args);
      var o = O(self), len = pureLength(o), view = null;
      if (len >= 0) pay(name, steps(len, args));
      else view = payingView(name, o, steps, args);
      if (adapt && args.length > 0) args[0] = adapt(args[0], view, o, name);
      var result = run(native, view === null ? self : view, args);
      return result === view ? o : result;
    }));
  }
  /** Array.prototype[key] in bytecode: concat and flat read other arrays' lengths as they go, after sandboxed code ran. */
  function rewriteArrayMethod(key, body) {
    var native = AP[key], name = "Array.prototype." + key;
    replaceBuiltin(AP, key, method(key, function (self, args) {
      if (self === null || self === undefined) return apply(native, self, args);
      return body(name, O(self), args);
    }));
  }
  // A null-prototype descriptor: sandboxed code that adds "get" or "value" to Object.prototype cannot change it.
  var element = create(null);
  element.writable = element.enumerable = element.configurable = true;
  /** CreateDataPropertyOrThrow(a, index, value), without Array.prototype setters or Object.prototype descriptor fields. */
  function defineElement(a, index, value) {
    if (index >= MAX_LENGTH) throw new TypeErrorC("the array would be longer than 2^53 - 1 elements");
    element.value = value;
    defProp(a, index, element);
    element.value = undefined;
  }
  /** ArraySpeciesCreate(o, 0): the built-in flatMap does it, run on a view of o without elements. */
  function speciesCreate(o) {
    var handler = create(null), view;
    handler.get = function (t, key) { return key === "length" ? 0 : reflectGet(t, key, o); };
    view = new RealProxy(o, handler);
    return apply(nativeFlatMap, view, [function () {}]);
  }
  function isSpreadable(e) {
    if (!isObject(e)) return false;
    var s = e[symSpreadable];
    return s !== undefined ? !!s : isArray(e);
  }
  function concat(name, o, args) {
    var a = speciesCreate(o), n = 0;
    for (var i = -1; i < args.length; i++) {
      var e = i < 0 ? o : args[i];
      if (!isSpreadable(e)) { defineElement(a, n++, e); continue; }
      var len = toLength(e.length);
      refuse(name, len);
      for (var k = 0; k < len; k++, n++) if (k in e) defineElement(a, n, e[k]);
    }
    a.length = n;
    return a;
  }
  function flat(name, o, args) {
    var len = toLength(o.length), depth = args.length > 0 && args[0] !== undefined ? toIntegerOrInfinity(args[0]) : 1;
    var a = speciesCreate(o);
    flattenInto(name, a, o, len, 0, depth);
    return a;
  }
  function flattenInto(name, a, source, len, start, depth) {
    refuse(name, len);
    var n = start;
    for (var k = 0; k < len; k++) {
      if (!(k in source)) continue;
      var e = source[k];
      if (depth > 0 && isArray(e)) n = flattenInto(name, a, e, toLength(e.length), n, depth - 1);
      else defineElement(a, n++, e);
    }
    return n;
  }

  /** %TypedArray%.prototype[key], paying steps(length, arguments): a typed array's length is never sandboxed code. */
  function meterTypedMethod(key, steps) {
    var native = TAP[key], name = "TypedArray.prototype." + key;
    replaceBuiltin(TAP, key, method(key, function (self, args) {
      var len = typedLengthOf(self);
      pay(name, steps(len < 0 ? 0 : len, args));
      return run(native, self, args);
    }));
  }
  /**
   * The source to hand Array.from, %TypedArray%.from or a typed array constructor, paid for: an array-like by
   * its length, and so is a real array, whose built-in iterator they drive without polling. Other iterables
   * (Map, Set, strings) hold what they yield, so the heap bounds them.
   */
  function paidSource(name, source) {
    if (!isObject(source)) return source;
    var iterable = pureIterable(source), len = pureLength(source);
    if (iterable === true && !isArray(source)) return source;
    if (iterable === null || len < 0) return payingView(name, source, perElement, []);
    pay(name, len);
    return source;
  }
  function meterFrom(owner, label) {
    var native = owner.from, name = label + ".from";
    replaceBuiltin(owner, "from", method("from", function (self, args) {
      if (args.length > 0) args[0] = paidSource(name, args[0]);
      return run(native, self, args);
    }));
  }
  /** Int8Array, Uint8Array, ...: the same constructor (prototype, statics, subclassing), paying for an array-like source. */
  function meterTypedConstructor(key) {
    var native = G[key];
    function TypedArray() {
      if (new.target === undefined) throw new TypeErrorC("must be called with new");
      if (arguments.length > 0) arguments[0] = paidSource(key, arguments[0]);
      return construct(native, arguments, new.target);
    }
    defProp(TypedArray, "prototype", { value: native.prototype, writable: false });
    setProto(TypedArray, TA);
    defProp(TypedArray, "BYTES_PER_ELEMENT", gOPD(native, "BYTES_PER_ELEMENT"));
    defProp(native.prototype, "constructor", { value: TypedArray, writable: true, enumerable: false, configurable: true });
    replaceBuiltin(G, key, TypedArray);
  }

  /** String.prototype[key]; body converts this and the string arguments once, in the specification's order, and hands the built-in primitives. */
  function meterStringMethod(key, body) {
    var native = SP[key], name = "String.prototype." + key;
    replaceBuiltin(SP, key, method(key, function (self, args) {
      if (self === null || self === undefined) return apply(native, self, args);
      return body(name, native, self, args);
    }));
  }
  function isRegExp(v) {
    var m = v[symMatch];
    if (m !== undefined) return !!m;
    try { apply(regexpSource, v, []); return true; } catch (e) { return false; }
  }
  function searchString(name, native, self, args) {
    var s = text(self), t = text(args[0]);
    args[0] = t;
    pay(name, searchSteps(s.length, t.length));
    return run(native, s, args);
  }
  function includesString(name, native, self, args) {
    var s = text(self);
    if (isObject(args[0]) && isRegExp(args[0])) return apply(native, s, args);
    return searchString(name, native, s, args);
  }
  function splitString(name, native, self, args) {
    var sep = args[0], limit = args[1];
    if (isObject(sep)) {
      var splitter = sep[symSplit];
      if (splitter !== undefined && splitter !== null) return apply(splitter, sep, [self, limit]);
    }
    var s = text(self), lim = limit === undefined ? undefined : limit >>> 0, r = sep === undefined ? undefined : text(sep);
    pay(name, r === undefined ? 0 : searchSteps(s.length, r.length));
    return run(native, s, [r, lim]);
  }
  function replaceString(name, native, self, args) {
    var sv = args[0], rv = args[1];
    if (isObject(sv)) {
      var replacer = sv[symReplace];
      if (replacer !== undefined && replacer !== null) return apply(replacer, sv, [self, rv]);
    }
    var s = text(self), t = text(sv);
    pay(name, searchSteps(s.length, t.length));
    return run(native, s, [t, rv]);
  }
  function replaceAllString(name, native, self, args) {
    var sv = args[0];
    if (isObject(sv) && isRegExp(sv)) {
      var flags = sv.flags;
      if (flags === undefined || flags === null) throw new TypeErrorC("cannot convert to object");
      if (indexOf(text(flags), "g") < 0) throw new TypeErrorC("regexp must have the 'g' flag");
    }
    return replaceString(name, native, self, args);
  }
  function producingString(name, native, self, args) { return run(native, self, args); }

  // The callbacks that make JSON.stringify and Iterator.prototype.drop poll also pay a step for each value they see.
  function passThrough(key, value) { burn(1); return value; }
  function identity(value) { burn(1); return value; }
  /** JSON.stringify polls for every value it serializes: without a replacer function, it gets one that changes nothing. */
  function stringifyJson(native) {
    return function (self, args) {
      var replacer = args[1];
      if (typeof replacer === "function" || isObject(replacer) && isArray(replacer)) return run(native, self, args);
      return run(native, self, [args[0], passThrough, args[2]]);
    };
  }
  function parseJson(native) {
    return function (self, args) {
      var s = text(args[0]);
      args[0] = s;
      pay("JSON.parse", s.length);
      return run(native, self, args);
    };
  }
  /** Iterator.prototype.drop skips through a built-in iterator without polling: it drops from a map() of it instead, which calls back for every item. */
  function dropItems(native) {
    return function (self, args) { return apply(native, apply(iteratorMap, self, [identity]), args); };
  }

  /** new Proxy() and Proxy.revocable() record their proxies, so that a length read through one counts as sandboxed code. */
  function installProxy() {
    var wrapper = apply(bind, function Proxy(target, handler) {
      if (new.target === undefined) throw new TypeErrorC("must be called with new");
      var p = new RealProxy(target, handler);
      apply(setAdd, proxies, [p]);
      return p;
    }, [null]);
    var revocable = RealProxy.revocable;
    defProp(wrapper, "revocable", gOPD(RealProxy, "revocable"));
    replaceBuiltin(wrapper, "revocable", method("revocable", function (self, args) {
      var r = apply(revocable, RealProxy, args);
      apply(setAdd, proxies, [r.proxy]);
      return r;
    }));
    replaceBuiltin(G, "Proxy", wrapper);
  }

  function installMeters(memoryBytes) {
    oomSteps = floor(memoryBytes / CHARS_PER_STEP);
    var i, names;
    names = ["indexOf", "lastIndexOf", "includes"];
    for (i = 0; i < names.length; i++) { meterArrayMethod(names[i], searching); meterTypedMethod(names[i], searching); }
    names = ["join", "reverse", "fill", "copyWithin", "slice", "toReversed", "with"];
    for (i = 0; i < names.length; i++) { meterArrayMethod(names[i], perElement); meterTypedMethod(names[i], perElement); }
    names = ["sort", "toSorted"];
    for (i = 0; i < names.length; i++) { meterArrayMethod(names[i], sorting); meterTypedMethod(names[i], sorting); }
    meterArrayMethod("toLocaleString", perElement);
    meterArrayMethod("shift", perElement);
    names = ["splice", "unshift", "toSpliced"];
    for (i = 0; i < names.length; i++) meterArrayMethod(names[i], perElementAndItem);
    names = ["every", "some", "forEach", "map", "filter", "reduce", "reduceRight", "find", "findIndex", "findLast", "findLastIndex"];
    for (i = 0; i < names.length; i++) meterArrayMethod(names[i], perElement, unviewed);
    meterArrayMethod("flatMap", perElement, flattening);
    rewriteArrayMethod("concat", concat);
    rewriteArrayMethod("flat", flat);
    meterTypedMethod("set", perElement);
    meterFrom(Array, "Array");
    meterFrom(TA, "TypedArray");
    names = ["Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array",
      "BigInt64Array", "BigUint64Array", "Float16Array", "Float32Array", "Float64Array"];
    for (i = 0; i < names.length; i++) meterTypedConstructor(names[i]);

    meterStringMethod("indexOf", searchString);
    meterStringMethod("lastIndexOf", searchString);
    meterStringMethod("includes", includesString);
    meterStringMethod("split", splitString);
    meterStringMethod("replace", replaceString);
    meterStringMethod("replaceAll", replaceAllString);
    names = ["repeat", "padStart", "padEnd"];
    for (i = 0; i < names.length; i++) meterStringMethod(names[i], producingString);

    replaceBuiltin(JSON, "stringify", method("stringify", stringifyJson(JSON.stringify)));
    replaceBuiltin(JSON, "parse", method("parse", parseJson(JSON.parse)));
    meteredParse = JSON.parse;
    replaceBuiltin(IP, "drop", method("drop", dropItems(IP.drop)));
    installProxy();
    replaceBuiltin(Function.prototype, "toString", method("toString", function (self, args) {
      var original = apply(mapGet, originals, [self]);
      return apply(fnToString, original === undefined ? self : original, args);
    }));
  }

  return function setup(print, nowMs, seed, maxOutput, memoryBytes) {
    install(nowMs, seed);
    installMeters(memoryBytes);

    // ---- console ----
    var written = 0, truncated = false;
    function write(args) {
      if (truncated) return;
      var line = "", n = args.length;
      for (var i = 0; i < n; i++) {
        var v = args[i];
        line += (i ? " " : "") + (typeof v === "string" ? v : show(v));
      }
      line += "\n";
      if (written + line.length > maxOutput) { line = slice(line, 0, maxOutput - written); truncated = true; }
      written += line.length;
      print(line);
    }
    function log() { write(arguments); }
    G.console = { log: log, info: log, debug: log, warn: log, error: log, trace: log };

    // ---- assert ----
    function AssertionError(message) { var e = new ErrorC(Str(message)); e.name = "AssertionError"; return e; }
    function deepEq(a, b, depth) {
      if (a === b || (a !== a && b !== b)) return true;
      if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
      if (depth > 100) throw new RangeErrorC("deepEqual: values nested deeper than 100 levels");
      var aa = isArray(a), ab = isArray(b), i;
      if (aa !== ab) return false;
      if (aa) {
        if (a.length !== b.length) return false;
        for (i = 0; i < a.length; i++) if (!deepEq(a[i], b[i], depth + 1)) return false;
        return true;
      }
      var da = isDate(a), db = isDate(b);
      if (da || db) return da && db && is(apply(getTime, a, []), apply(getTime, b, []));
      if (getProto(a) !== getProto(b)) return false;
      var ka = keys(a), kb = keys(b);
      if (ka.length !== kb.length) return false;
      for (i = 0; i < ka.length; i++) {
        if (!apply(hasOwn, b, [ka[i]])) return false;
        if (!deepEq(a[ka[i]], b[ka[i]], depth + 1)) return false;
      }
      return true;
    }
    function assert(value, message) { if (!value) throw AssertionError(message === undefined ? "expected a truthy value, got " + show(value) : message); }
    assert.ok = assert;
    assert.equal = function equal(actual, expected, message) {
      if (!(actual === expected || (actual !== actual && expected !== expected))) throw AssertionError(message === undefined ? "expected " + show(expected) + ", got " + show(actual) : message);
    };
    assert.strictEqual = assert.equal;
    assert.notEqual = function notEqual(actual, expected, message) {
      if (actual === expected || (actual !== actual && expected !== expected)) throw AssertionError(message === undefined ? "expected a value other than " + show(expected) : message);
    };
    assert.notStrictEqual = assert.notEqual;
    assert.deepEqual = function deepEqual(actual, expected, message) {
      if (!deepEq(actual, expected, 0)) throw AssertionError(message === undefined ? "expected " + show(expected) + ", got " + show(actual) : message);
    };
    assert.deepStrictEqual = assert.deepEqual;
    assert.notDeepEqual = function notDeepEqual(actual, expected, message) {
      if (deepEq(actual, expected, 0)) throw AssertionError(message === undefined ? "expected a value different from " + show(expected) : message);
    };
    assert.notDeepStrictEqual = assert.notDeepEqual;
    assert.throws = function throws(fn, expected, message) {
      var threw = false, err;
      try { fn(); } catch (e) { threw = true; err = e; }
      if (!threw) throw AssertionError(message === undefined ? "expected the function to throw" : message);
      if (expected === undefined) return;
      if (typeof expected === "function") {
        if (!isInstance(expected, err)) throw AssertionError(message === undefined ? "the function threw " + describe(err) + ", not the expected error type" : message);
      } else if (isInstance(RegExp, expected)) {
        if (!apply(rTest, expected, [Str(isInstance(ErrorC, err) ? err.message : err)])) throw AssertionError(message === undefined ? "the error " + describe(err) + " does not match " + Str(expected) : message);
      }
    };
    assert.match = function match(value, re, message) {
      if (typeof value !== "string" || !apply(rTest, re, [value])) throw AssertionError(message === undefined ? show(value) + " does not match " + Str(re) : message);
    };
    assert.fail = function fail(message) { throw AssertionError(message === undefined ? "failed" : message); };
    assert.AssertionError = AssertionError;
    freeze(assert);

    // ---- errors as text ----
    function describe(e) {
      try {
        if (isInstance(ErrorC, e)) {
          var text = Str(e.name) + ": " + Str(e.message);
          if (text === "InternalError: stack overflow") text += " (maximum call stack size exceeded: infinite recursion?)";
          var stack = typeof e.stack === "string" ? e.stack : "";
          var m = apply(rExec, /\((?!<)([^():]+):(\d+)(?::\d+)?\)/, [stack]);
          if (m && e.name !== "AssertionError" && indexOf(text, " (at ") < 0) text += " (at " + m[1] + ":" + m[2] + ")";
          return text.length > 1000 ? slice(text, 0, 997) + "..." : text;
        }
        return "a non-Error value was thrown: " + show(e);
      } catch (x) {
        return "an error that cannot be described was thrown";
      }
    }
    function verdict(e) { return isOom(e) ? "Mout of memory: the run's memory limit was reached" : "F" + describe(e); }

    // ---- modules ----
    var defs = create(null), cache = create(null), entries = create(null);
    var BUILTIN_ASSERT = "\u0000assert", BUILTIN_TEST = "\u0000test";
    function normalize(path) {
      var segs = apply(sSplit, path, ["/"]), out = [], n = 0;
      for (var i = 0; i < segs.length; i++) {
        var s = segs[i];
        if (s === "" || s === ".") continue;
        if (s === "..") { if (n === 0) return null; n--; continue; }
        defineElement(out, n++, s);
      }
      var joined = "";
      for (var j = 0; j < n; j++) joined += (j ? "/" : "") + out[j];
      return joined;
    }
    function dirname(p) { var i = apply(sLastIndexOf, p, ["/"]); return i < 0 ? "" : slice(p, 0, i); }
    function resolve(from, spec) {
      if (spec === "assert" || spec === "node:assert" || spec === "assert/strict" || spec === "node:assert/strict") return BUILTIN_ASSERT;
      if (spec === "node:test") return BUILTIN_TEST;
      var rel = indexOf(spec, "./") === 0 || indexOf(spec, "../") === 0;
      if (!rel && indexOf(spec, "/") !== 0) {
        throw new ErrorC("Cannot find module '" + spec + "' (required from " + (from || "the runner") + "): the sandbox has no node_modules and no built-in modules such as fs, path, child_process or http; require project files with a relative path");
      }
      var base = normalize(rel ? dirname(from) + "/" + spec : spec);
      var tries = base === null ? [] : [base, base + ".js", base + ".json", base + "/index.js"];
      for (var i = 0; i < tries.length; i++) if (defs[tries[i]] !== undefined) return tries[i];
      throw new ErrorC("Cannot find module '" + spec + "' (required from " + (from || "the runner") + ")");
    }
    function makeRequire(from) {
      return function require(spec) {
        var path = resolve(from, Str(spec));
        if (path === BUILTIN_ASSERT) return assert;
        if (path === BUILTIN_TEST) return { test: test, describe: describeBlock, it: test };
        var hit = cache[path];
        if (hit !== undefined) return hit.exports;
        var def = defs[path];
        if (def.error !== undefined) throw new SyntaxErrorC(def.error);
        var module = { exports: {}, id: path, filename: path, loaded: false };
        cache[path] = module;
        try {
          if (def.json !== undefined) module.exports = meteredParse(def.json);
          else {
            // Only test files see the test API: project code cannot register (or fake) a test.
            var isEntry = entries[path] === true;
            var body = apply(def.fn, undefined, isEntry ? [test, assert, describeBlock, test] : [undefined, undefined, undefined, undefined]);
            apply(body, module.exports, [module.exports, makeRequire(path), module, path, dirname(path)]);
          }
        } catch (e) {
          cache[path] = undefined;
          throw e;
        }
        module.loaded = true;
        return module.exports;
      };
    }

    // ---- tests ----
    var tests = create(null), count = 0, current = null, prefix = "", results = create(null);
    function test(name, fn) {
      if (current === null) throw new ErrorC("test() can only be called while a test file loads");
      if (typeof fn !== "function") throw new TypeErrorC("test(name, fn): fn must be a function");
      tests[count++] = { name: prefix + Str(name), file: current, fn: fn };
    }
    function describeBlock(name, fn) {
      var saved = prefix;
      prefix = saved + Str(name) + " > ";
      try { fn(); } finally { prefix = saved; }
    }

    return {
      define: function (path, fn) { defs[path] = { fn: fn }; },
      defineError: function (path, message) { defs[path] = { error: message }; },
      defineJson: function (path, text) { defs[path] = { json: text }; },
      entry: function (path) { entries[path] = true; },
      load: function (path) {
        var before = count;
        current = path;
        prefix = "";
        try {
          makeRequire("")("./" + path);
          return "";
        } catch (e) {
          count = before;
          return isOom(e) ? "M" + describe(e) : "E" + describe(e);
        } finally {
          current = null;
        }
      },
      count: function () { return count; },
      name: function (i) { return tests[i].name; },
      file: function (i) { return tests[i].file; },
      run: function (i) {
        var result;
        try { result = apply(tests[i].fn, undefined, []); } catch (e) { return verdict(e); }
        if (result !== null && typeof result === "object") {
          try {
            apply(then, result, [function () { results[i] = "P"; }, function (e) { results[i] = verdict(e); }]);
            return "A";
          } catch (e) { /* not a promise: the returned value is ignored */ }
        }
        return "P";
      },
      settle: function (i) { var r = results[i]; return r === undefined ? "A" : r; },
      truncated: function () { return truncated; },
    };
  };
})()`;

// ---- the worker ----------------------------------------------------------------------------------------

/** A message from the host to the worker. */
interface WorkerRequest {
  id: number;
  request: ReturnType<typeof normalizeRequest>;
}
/** A message from the worker to the host; `restart`: the result is final, but the worker is stuck and must be replaced. */
type WorkerReply = { id: number; result: CodeRunResult; restart?: true } | { id: number; fatal: string };

/**
 * The worker's program. It runs in a worker thread as source text (`String(workerMain)`), so it must be
 * self-contained: no imports, no module-level helpers, only what it receives.
 */
/* c8 ignore start */
function workerMain(data: { quickjs: string; prelude: string }): void {
  // The interpreter prints "Aborted(...)" when it fails; the run's result reports that, the host's log should not.
  console.log = console.error = console.warn = () => undefined;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const threads = require("node:worker_threads") as typeof import("node:worker_threads");
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const qjs = require(data.quickjs) as typeof import("quickjs-emscripten");
  type Mod = import("quickjs-emscripten").QuickJSWASMModule;
  type Handle = import("quickjs-emscripten").QuickJSHandle;
  let modPromise: Promise<Mod> = qjs.newQuickJSWASMModule(qjs.RELEASE_SYNC);
  const port = threads.parentPort!;

  function execute(mod: Mod, id: number, req: WorkerRequest["request"]): CodeRunResult {
    const limits = req.limits;
    const rt = mod.newRuntime();
    rt.setMemoryLimit(limits.memoryBytes);
    rt.setMaxStackSize(limits.stackBytes);
    let ticks = 0;
    let phase = 0;
    let budget = limits.phaseTicks;
    let interrupted: "phase" | "total" | "wall" | null = null;
    // Harness bookkeeping (reading a test's name) is counted but never interrupted, except by the backstop.
    let free = false;
    const deadline = performance.now() + limits.wallClockMs;
    // The interrupt is uncatchable, but a built-in that closes an iterator on the way out (spread, Array.from,
    // new Set, iterator helpers) rethrows it as an ordinary error, and code that catches it runs on. Only
    // that code polls again after its phase was stopped: RUN_ON_TICKS later, the worker reports the run so
    // far and has the host replace it, since nothing inside can stop that code.
    const RUN_ON_TICKS = 10;
    let stoppedAt = 0;
    let restartRequested = false;
    // The phase running sandboxed code: what to call it, and how to report it and the rest of the run as not done.
    let current: { label: string; abandon: (text: string) => void } | null = null;
    rt.setInterruptHandler(() => {
      ticks++;
      phase++;
      if (free) interrupted = null;
      else if (interrupted !== null) {
        if (phase - stoppedAt > RUN_ON_TICKS) abandonRun();
      } else {
        if (phase > budget) interrupted = "phase";
        else if (ticks > limits.totalTicks) interrupted = "total";
        else if (performance.now() > deadline) interrupted = "wall";
        stoppedAt = phase;
      }
      return interrupted !== null;
    });
    rt.setModuleLoader((name: string) => ({
      error: new Error(`import() is not available in the sandbox (tried to import '${name}'); use require() with a relative path`),
    }));
    const ctx = rt.newContext();
    const owned: Handle[] = [];
    const own = (h: Handle): Handle => (owned.push(h), h);
    let output = "";
    const tests: CodeRunResult["tests"] = [];
    const loadErrors: CodeRunResult["loadErrors"] = [];
    let status: CodeRunResult["status"] = "ok";
    let message: string | null = null;
    const rank = { ok: 0, error: 1, timeout: 2, memory: 3 } as const;
    const note = (s: CodeRunResult["status"], text: string) => {
      if (rank[s] > rank[status]) status = s;
      if (message === null) message = text;
    };
    const startPhase = (unlimited = false) => {
      phase = 0;
      interrupted = null;
      budget = limits.phaseTicks;
      free = unlimited;
    };
    const limitText = (what: string) =>
      interrupted === "wall"
        ? `${what} exceeded the wall-clock backstop of ${limits.wallClockMs} ms`
        : interrupted === "total"
          ? `${what} was stopped: the run used up its total instruction budget (${limits.totalTicks} ticks)`
          : `${what} exceeded its instruction budget (${limits.phaseTicks} ticks): an infinite loop?`;
    /** Report the run as it stands, the current phase and the rest as not done, and ask the host to restart the worker. */
    const abandonRun = () => {
      if (restartRequested || current === null) return;
      restartRequested = true;
      current.abandon(limitText(current.label));
      note("timeout", `${current.label} kept running after it was stopped (it caught the interrupt), so its sandbox was restarted`);
      const result = { status, tests, loadErrors, output, outputTruncated: output.length >= limits.maxOutputChars, message, ticks };
      port.postMessage({ id, result, restart: true } satisfies WorkerReply);
    };
    /** Classify an exception that escaped into the host: a limit, or (rarely) a plain error. */
    const escaped = (error: Handle): { status: "timeout" | "memory" | "error"; text: string; at: string } => {
      let text = "";
      let at = "";
      try {
        const d = ctx.dump(error) as { message?: unknown; stack?: unknown } | null;
        text = d && typeof d === "object" ? String(d.message ?? "") : String(d);
        const where = d && typeof d === "object" && typeof d.stack === "string" ? /\(?([^\s()]+:\d+)(?::\d+)?\)?/.exec(d.stack) : null;
        at = where ? where[1]! : "";
      } catch {
        text = "out of memory";
      }
      error.dispose();
      if (interrupted !== null) return { status: "timeout", text: "", at };
      if (text === "out of memory" || text === "null") return { status: "memory", text: "out of memory: the run's memory limit was reached", at };
      return { status: "error", text, at };
    };
    try {
      const print = own(
        ctx.newFunction("print", (h) => {
          output += ctx.getString(h);
        }),
      );
      startPhase();
      const made = ctx.evalCode(data.prelude, "<prelude>", { type: "global" });
      if (made.error) throw new Error(`prelude failed: ${JSON.stringify(ctx.dump(made.error))}`);
      const setup = own(made.value);
      const args = [print, own(ctx.newNumber(req.nowMs)), own(ctx.newNumber(req.seed)), own(ctx.newNumber(limits.maxOutputChars)), own(ctx.newNumber(limits.memoryBytes))];
      const built = ctx.callFunction(setup, ctx.undefined, ...args);
      if (built.error) throw new Error(`prelude setup failed: ${JSON.stringify(ctx.dump(built.error))}`);
      const harness = own(built.value);
      const fn = (name: string) => own(ctx.getProp(harness, name));
      const api = {
        define: fn("define"), defineError: fn("defineError"), defineJson: fn("defineJson"), entry: fn("entry"),
        load: fn("load"), count: fn("count"), name: fn("name"), file: fn("file"), run: fn("run"), settle: fn("settle"),
        truncated: fn("truncated"),
      };
      /** Call a harness method; a string result, or the exception that escaped. */
      const call = (method: Handle, ...values: Array<string | number | Handle>): { value: string | number | boolean } | { error: Handle } => {
        const handles = values.map((v) => (typeof v === "string" ? ctx.newString(v) : typeof v === "number" ? ctx.newNumber(v) : v));
        try {
          const r = ctx.callFunction(method, harness, ...handles);
          if (r.error) return { error: r.error };
          const t = ctx.typeof(r.value);
          const value = t === "string" ? ctx.getString(r.value) : t === "number" ? ctx.getNumber(r.value) : t === "boolean" ? ctx.dump(r.value) === true : "";
          r.value.dispose();
          return { value };
        } finally {
          handles.forEach((h, i) => {
            if (typeof values[i] !== "object") h.dispose();
          });
        }
      };

      // Compile every file (a parse, no project code runs), then mark the entries.
      for (const path of Object.keys(req.files).sort()) {
        const source = req.files[path]!;
        startPhase();
        if (path.endsWith(".json")) {
          const r = call(api.defineJson, path, source);
          if ("error" in r) r.error.dispose();
          continue;
        }
        if (!path.endsWith(".js")) continue;
        const compiled = ctx.evalCode(
          // The test API lives in an enclosing scope (not parameters), so `const assert = require("assert")` still works.
          `(function (test, assert, describe, it) { return function (exports, require, module, __filename, __dirname) {${source}\n}; })`,
          path,
          { type: "global" },
        );
        if (compiled.error) {
          const e = escaped(compiled.error);
          let text = e.status === "error" ? `${e.text} (at ${e.at || path})` : `${path}: ${e.status === "timeout" ? "compiling took too long" : e.text}`;
          if (/import|export/.test(e.text)) text += " (the sandbox runs CommonJS modules: use require() and module.exports, not import/export)";
          const r = call(api.defineError, path, text);
          if ("error" in r) r.error.dispose();
          continue;
        }
        const r = call(api.define, path, compiled.value);
        compiled.value.dispose();
        if ("error" in r) r.error.dispose();
      }
      for (const entry of req.entries) {
        const r = call(api.entry, entry);
        if ("error" in r) r.error.dispose();
      }

      // Load the entries: module top-level code runs here, tests register.
      for (const [index, entry] of req.entries.entries()) {
        if (ticks > limits.totalTicks) {
          loadErrors.push({ file: entry, status: "timeout", message: "not loaded: the run used up its total instruction budget" });
          note("timeout", `${entry} was not loaded: the run used up its total instruction budget (${limits.totalTicks} ticks)`);
          continue;
        }
        current = {
          label: `loading ${entry}`,
          abandon: (text) => {
            loadErrors.push({ file: entry, status: "timeout", message: text });
            for (const later of req.entries.slice(index + 1)) loadErrors.push({ file: later, status: "timeout", message: "not loaded: the run was stopped" });
          },
        };
        startPhase();
        const r = call(api.load, entry);
        current = null;
        if ("error" in r) {
          const e = escaped(r.error);
          const text = e.status === "timeout" ? limitText(`loading ${entry}`) : e.text;
          loadErrors.push({ file: entry, status: e.status, message: text });
          note(e.status, text);
        } else if (interrupted !== null) {
          const text = limitText(`loading ${entry}`);
          loadErrors.push({ file: entry, status: "timeout", message: text });
          note("timeout", text);
        } else if (r.value !== "") {
          const text = String(r.value).slice(1);
          const s = String(r.value)[0] === "M" ? "memory" : "error";
          loadErrors.push({ file: entry, status: s, message: text });
          note(s, `${entry} failed to load: ${text}`);
        }
      }

      // Run the tests one by one, each with its own budget, all within the run's total.
      startPhase(true);
      const countResult = call(api.count);
      const n = "value" in countResult ? Number(countResult.value) : 0;
      if ("error" in countResult) countResult.error.dispose();
      const registered = Array.from({ length: n }, (_, i) => {
        const nameR = call(api.name, i);
        const fileR = call(api.file, i);
        const name = "value" in nameR ? String(nameR.value) : `test #${i + 1}`;
        const file = "value" in fileR ? String(fileR.value) : "";
        if ("error" in nameR) nameR.error.dispose();
        if ("error" in fileR) fileR.error.dispose();
        return { file, name };
      });
      for (const [i, { file, name }] of registered.entries()) {
        if (ticks > limits.totalTicks) {
          tests.push({ file, name, status: "timeout", message: "not run: the run used up its total instruction budget" });
          continue;
        }
        current = {
          label: `test "${name}"`,
          abandon: (text) => {
            tests.push({ file, name, status: "timeout", message: text });
            for (const later of registered.slice(i + 1)) tests.push({ ...later, status: "timeout", message: "not run: the run was stopped" });
          },
        };
        startPhase();
        let r = call(api.run, i);
        if ("value" in r && r.value === "A") {
          // An async test: run the promise jobs it queued, within the same budget.
          const jobs = rt.executePendingJobs();
          if (jobs.error) r = { error: jobs.error };
          else r = call(api.settle, i);
        } else {
          const jobs = rt.executePendingJobs();
          if (jobs.error) jobs.error.dispose();
        }
        current = null;
        let outcome: CodeRunResult["tests"][number];
        if ("error" in r) {
          const e = escaped(r.error);
          const text = e.status === "timeout" ? limitText(`test "${name}"`) : e.status === "memory" ? e.text : `the test crashed the harness: ${e.text}`;
          outcome = { file, name, status: e.status === "memory" ? "memory" : e.status === "timeout" ? "timeout" : "failed", message: text };
          if (e.status !== "error") note(e.status, text);
        } else if (interrupted !== null) {
          // The code caught the interrupt (see RUN_ON_TICKS) and returned: a stopped phase is a timeout all the same.
          const text = limitText(`test "${name}"`);
          outcome = { file, name, status: "timeout", message: text };
          note("timeout", text);
        } else {
          const v = String(r.value);
          if (v === "P") outcome = { file, name, status: "passed", message: null };
          else if (v === "A") outcome = { file, name, status: "failed", message: "the test's promise never settled (the sandbox has no timers or I/O to wait for)" };
          else if (v[0] === "M") {
            outcome = { file, name, status: "memory", message: v.slice(1) };
            note("memory", `test "${name}": ${v.slice(1)}`);
          } else outcome = { file, name, status: "failed", message: v.slice(1) };
        }
        tests.push(outcome);
      }
      startPhase(true);
      const tr = call(api.truncated);
      const truncated = "value" in tr && tr.value === true;
      if ("error" in tr) tr.error.dispose();
      return { status, tests, loadErrors, output, outputTruncated: truncated, message, ticks };
    } finally {
      for (let i = owned.length - 1; i >= 0; i--) owned[i]!.dispose();
      ctx.dispose();
      rt.dispose();
    }
  }

  port.on("message", (msg: WorkerRequest) => {
    void modPromise.then(
      (mod) => {
        let reply: WorkerReply;
        try {
          reply = { id: msg.id, result: execute(mod, msg.id, msg.request) };
        } catch (error) {
          // The interpreter's state can no longer be trusted: load a fresh module for the next run.
          modPromise = qjs.newQuickJSWASMModule(qjs.RELEASE_SYNC);
          reply = { id: msg.id, fatal: error instanceof Error ? error.message : String(error) };
        }
        port.postMessage(reply);
      },
      (error: unknown) => port.postMessage({ id: msg.id, fatal: `cannot load the interpreter: ${String(error)}` }),
    );
  });
}
/* c8 ignore stop */

// ---- the host side -------------------------------------------------------------------------------------

/** Options of a CodeRunner. */
export interface CodeRunnerOptions {
  /** Extra wall-clock time the host waits beyond a run's own backstop before it kills the worker. Default 5000 ms. */
  watchdogSlackMs?: number;
}

interface Pending {
  id: number;
  request: ReturnType<typeof normalizeRequest>;
  resolve: (result: CodeRunResult) => void;
}

/** A failed run that produced nothing: every entry is reported as not loaded. */
function failedRun(request: ReturnType<typeof normalizeRequest>, status: "error" | "timeout", message: string): CodeRunResult {
  return {
    status,
    tests: [],
    loadErrors: request.entries.map((file) => ({ file, status, message })),
    output: "",
    outputTruncated: false,
    message,
    ticks: 0,
  };
}

/**
 * Runs code in the sandbox, one run at a time, in a worker thread started on first use and restarted
 * after a crash or a hang. Runs never throw for anything the code does; only a malformed request throws.
 */
export class CodeRunner {
  private worker: Worker | null = null;
  private readonly queue: Pending[] = [];
  private active: Pending | null = null;
  private timer: NodeJS.Timeout | null = null;
  private nextId = 1;
  private closed = false;
  private readonly slackMs: number;
  /** Workers started so far (a restart after a crash or hang starts another). */
  restarts = -1;

  constructor(options: CodeRunnerOptions = {}) {
    this.slackMs = options.watchdogSlackMs ?? 5_000;
  }

  /** Run a request; resolves with the structured result (never rejects for what the code does). */
  run(request: CodeRunRequest): Promise<CodeRunResult> {
    if (this.closed) throw new ValidationError("invalid_config", "this CodeRunner was closed");
    const normalized = normalizeRequest(request);
    return new Promise<CodeRunResult>((resolve) => {
      this.queue.push({ id: this.nextId++, request: normalized, resolve });
      this.pump();
    });
  }

  /** Stop the worker; pending runs end with status `error`. */
  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.queue.splice(0)) p.resolve(failedRun(p.request, "error", "the code runner was closed"));
    this.finish(failedRun(this.active?.request ?? normalizeRequest({ files: {}, entries: [] }), "error", "the code runner was closed"));
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }

  private pump(): void {
    if (this.active || this.queue.length === 0) return;
    const next = this.queue.shift()!;
    this.active = next;
    const worker = this.ensureWorker();
    worker.ref();
    this.timer = setTimeout(() => {
      // The run stopped polling its interrupt handler (a native loop): only killing the thread ends it.
      this.kill();
      this.finish(failedRun(next.request, "timeout", `the run exceeded the wall-clock backstop (${next.request.limits.wallClockMs} ms) and its sandbox was restarted`));
    }, next.request.limits.wallClockMs + this.slackMs);
    worker.postMessage({ id: next.id, request: next.request } satisfies WorkerRequest);
  }

  private finish(result: CodeRunResult, id?: number): void {
    const active = this.active;
    if (!active || (id !== undefined && id !== active.id)) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.active = null;
    this.worker?.unref();
    active.resolve(result);
    this.pump();
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const require = createRequire(import.meta.url);
    const data = { quickjs: require.resolve("quickjs-emscripten"), prelude: PRELUDE };
    // Bundlers and loaders may wrap functions in a `__name` helper; give the worker a no-op one.
    const source = `var __name = (f) => f;\n(${workerMain.toString()})(require("node:worker_threads").workerData);`;
    const worker = new Worker(source, {
      eval: true,
      workerData: data,
      // The worker is a plain CommonJS script: the host's flags (`--input-type=module`, loaders) must not apply to it.
      execArgv: [],
      // A deep native stack: QuickJS's own stack limit must always trip first (see the module comment).
      resourceLimits: { stackSizeMb: 64, maxOldGenerationSizeMb: 128, maxYoungGenerationSizeMb: 16 },
    });
    worker.on("message", (reply: WorkerReply) => {
      if ("fatal" in reply) {
        const active = this.active;
        if (active && active.id === reply.id) this.finish(failedRun(active.request, "error", `the sandbox failed and was reset: ${reply.fatal}`), reply.id);
        return;
      }
      // The worker is stuck in code that caught its interrupt: its report is final, the worker is replaced.
      if (reply.restart && reply.id === this.active?.id) this.kill();
      this.finish(reply.result, reply.id);
    });
    const onDeath = (reason: string) => {
      if (this.worker !== worker) return;
      this.worker = null;
      const active = this.active;
      if (active) this.finish(failedRun(active.request, "error", `the sandbox crashed (${reason}) and was restarted`));
    };
    worker.on("error", (error) => onDeath(error.message));
    worker.on("exit", (code) => onDeath(`exit code ${code}`));
    worker.unref();
    this.worker = worker;
    this.restarts++;
    return worker;
  }

  private kill(): void {
    const worker = this.worker;
    this.worker = null;
    if (worker) void worker.terminate();
  }
}

let shared: CodeRunner | null = null;

/** The process-wide runner (one worker, started on first use; it never keeps the process alive when idle). */
export function sharedCodeRunner(): CodeRunner {
  shared ??= new CodeRunner();
  return shared;
}

/** Run a request on the process-wide runner. */
export function runCode(request: CodeRunRequest): Promise<CodeRunResult> {
  return sharedCodeRunner().run(request);
}

/**
 * printf formatting for awk (printf, sprintf, CONVFMT and OFMT): %c %d %i %o %u %x %X %e %E %f %F %g %G
 * %s %%, flags `- + space # 0`, widths and precisions (also from `*`). Results match C's printf,
 * including round-half-to-even on exact ties (JS's toFixed rounds those up), so `%.2f` of 0.125 is
 * "0.12" as in every awk. Widths and precisions are checked before anything is padded, and the result
 * is measured as it grows, so a format can never build more than the caller allows.
 */
import { FLOAT_FORMAT_COST } from "./errors.js";
import { StrNum, UNINIT, integerString, nonFiniteString, type Value } from "./values.js";

/** What formatting needs from the interpreter. */
export interface FormatContext {
  toNum(v: Value): number;
  /** String conversion for %s (CONVFMT for numbers). */
  toStr(v: Value): string;
  /** Refuses (throws) a width or precision beyond the sandbox's limit; `directive` is e.g. "%999999d". */
  checkWidth(directive: string, size: number, what: "field width" | "precision"): void;
  /** Called as the result grows by `added` to `total` characters (it may throw to stop it). */
  grow(added: number, total: number): void;
  /** Charges work that is not output (formatting a float costs more than its length). */
  work(units: number): void;
  /** Reports a fatal error (too few arguments). */
  fail(message: string): never;
}

/** Most fractional digits JS formats; further digits a precision asks for are zeros. */
const MAX_JS_DIGITS = 100;

const bits = new DataView(new ArrayBuffer(8));

/** |x| = m × 2^e with m an integer below 2^53 (exact as a double). */
function decompose(x: number): { m: number; e: number } {
  bits.setFloat64(0, x);
  const hi = bits.getUint32(0);
  const lo = bits.getUint32(4);
  const exp = (hi >>> 20) & 0x7ff;
  const m = (hi & 0xfffff) * 2 ** 32 + lo;
  return exp === 0 ? { m, e: -1074 } : { m: m + 2 ** 52, e: exp - 1075 };
}

/**
 * True when |x| × 10^k lies exactly halfway between two integers, i.e. 2·|x|·10^k is an odd integer.
 * With |x| = m·2^e (m odd after removing its factors of 2) that holds when the powers of two cancel
 * exactly and, for k < 0, 5^-k divides m: integer arithmetic only, no BigInt on the common path.
 */
function isTie(x: number, k: number): boolean {
  let { m, e } = decompose(x);
  if (m === 0 || e >= 0) return false;
  const lo = m % 2 ** 32;
  const zeros = lo !== 0 ? 31 - Math.clz32(lo & -lo) : 32 + (31 - Math.clz32((m / 2 ** 32) & -(m / 2 ** 32)));
  m /= 2 ** zeros;
  e += zeros;
  if (k >= 0) return e + 1 + k === 0;
  // 5^22 is the largest power of five below 2^53; m cannot be a multiple of a larger one.
  return e + 1 - -k === 0 && -k <= 22 && m % 5 ** -k === 0;
}

/**
 * floor(|x| × 10^k) for an exact tie, as its decimal digits and whether it is even. When the result is
 * below 2^52 the double product (or quotient) is exact, so BigInt is needed only for huge values.
 */
function tieFloor(x: number, k: number): { digits: string; even: boolean } {
  if (Math.abs(k) <= 22) {
    const scaled = k >= 0 ? x * 10 ** k : x / 10 ** -k;
    if (scaled < 2 ** 52) {
      const h = Math.floor(scaled);
      return { digits: String(h), even: h % 2 === 0 };
    }
  }
  const { m, e } = decompose(x);
  let num = BigInt(m);
  let den = 1n;
  if (k >= 0) num *= 10n ** BigInt(k);
  else den *= 10n ** BigInt(-k);
  if (e >= 0) num <<= BigInt(e);
  else den <<= BigInt(-e);
  const h = num / den;
  return { digits: h.toString(), even: h % 2n === 0n };
}

/** %f digits of a finite x ≥ 0 with `p` fractional digits. */
function fixed(x: number, p: number): string {
  if (x >= 1e21) return BigInt(x).toString() + (p > 0 ? `.${"0".repeat(p)}` : "");
  const q = Math.min(p, MAX_JS_DIGITS);
  let s = x.toFixed(q);
  // An exact tie rounds to even in C; JS always rounds it up.
  if (isTie(x, q)) {
    const h = tieFloor(x, q);
    if (h.even) {
      const digits = h.digits.padStart(q + 1, "0");
      s = q === 0 ? digits : `${digits.slice(0, -q)}.${digits.slice(-q)}`;
    }
  }
  return s + "0".repeat(p - q);
}

/** %e digits of a finite x ≥ 0 with `p` fractional digits, the exponent with at least two digits. */
function exponential(x: number, p: number): string {
  const q = Math.min(p, MAX_JS_DIGITS);
  const s = x.toExponential(q);
  const e = s.indexOf("e");
  let mantissa = s.slice(0, e);
  const X = Number(s.slice(e + 1));
  if (x !== 0 && isTie(x, q - X)) {
    const h = tieFloor(x, q - X);
    if (h.even) mantissa = q === 0 ? h.digits : `${h.digits[0]}.${h.digits.slice(1)}`;
  }
  return `${mantissa}${"0".repeat(p - q)}e${X < 0 ? "-" : "+"}${String(Math.abs(X)).padStart(2, "0")}`;
}

/** %g digits of a finite x ≥ 0 with `p` significant digits; `alt` (#) keeps trailing zeros. */
function general(x: number, p: number, alt: boolean): string {
  const P = p === 0 ? 1 : p;
  const X = x === 0 ? 0 : Number(exponential(x, P - 1).split("e")[1]);
  let s = P > X && X >= -4 ? fixed(x, P - 1 - X) : exponential(x, P - 1);
  if (!alt && s.includes(".")) {
    // Trailing zeros of the fraction go, and the point with them if nothing is left after it.
    const e = s.indexOf("e");
    let end = e < 0 ? s.length : e;
    while (s.charCodeAt(end - 1) === 48) end -= 1;
    if (s.charCodeAt(end - 1) === 46) end -= 1;
    s = s.slice(0, end) + (e < 0 ? "" : s.slice(e));
  }
  return s;
}

/** The digits of a float conversion of finite x ≥ 0. */
function floatDigits(x: number, conv: string, p: number, alt: boolean): string {
  let s: string;
  const lower = conv.toLowerCase();
  if (lower === "f") s = fixed(x, p);
  else if (lower === "e") s = exponential(x, p);
  else s = general(x, p, alt);
  if (alt && !s.includes(".") && lower !== "g") {
    const e = s.indexOf("e");
    s = e < 0 ? `${s}.` : `${s.slice(0, e)}.${s.slice(e)}`;
  }
  return conv === lower ? s : s.toUpperCase();
}

/** Formats a non-integral number with a CONVFMT/OFMT of "%.Ng" quickly; other formats go through sprintf. */
export function formatG(x: number, p: number): string {
  if (!Number.isFinite(x)) return nonFiniteString(x);
  const body = general(Math.abs(x), p, false);
  return x < 0 ? `-${body}` : body;
}

interface Spec {
  left: boolean;
  plus: boolean;
  space: boolean;
  alt: boolean;
  zero: boolean;
  width: number;
  precision: number | undefined;
}

/** Pads `body` (after `sign` and `prefix`) to the width; zeros go between the prefix and the digits. */
function pad(spec: Spec, sign: string, prefix: string, body: string, zeroAllowed: boolean): string {
  const length = sign.length + prefix.length + body.length;
  if (length >= spec.width) return sign + prefix + body;
  const fill = spec.width - length;
  if (spec.left) return sign + prefix + body + " ".repeat(fill);
  if (spec.zero && zeroAllowed) return sign + prefix + "0".repeat(fill) + body;
  return " ".repeat(fill) + sign + prefix + body;
}

function signOf(negative: boolean, spec: Spec): string {
  return negative ? "-" : spec.plus ? "+" : spec.space ? " " : "";
}

/** Characters of `s` (code points), for %c and %s precision. */
function firstChars(s: string, n: number): string {
  if (!/[\uD800-\uDFFF]/.test(s)) return s.slice(0, n);
  return Array.from(s).slice(0, n).join("");
}

/** The number %c and the numeric conversions see; a strnum that looks numeric counts as a number. */
function numericArg(v: Value): boolean {
  return typeof v === "number" || (v instanceof StrNum && v.num !== null);
}

function integerConversion(v: number, conv: string, spec: Spec): string {
  if (!Number.isFinite(v)) return pad({ ...spec, zero: false }, "", "", nonFiniteString(v), false);
  const t = Math.trunc(v);
  let digits: string;
  let negative = false;
  let prefix = "";
  if (conv === "d" || conv === "i") {
    negative = t < 0;
    digits = integerString(Math.abs(t)).replace(/^-/, "");
  } else {
    // Negative values print as their 64-bit two's complement, as C's unsigned conversions do.
    const big = t < 0 && t >= -(2 ** 63) ? BigInt.asUintN(64, BigInt(t)) : BigInt(Math.abs(t));
    const radix = conv === "o" ? 8 : conv === "u" ? 10 : 16;
    digits = big.toString(radix);
    if (conv === "X") digits = digits.toUpperCase();
    if (spec.alt && conv === "o" && !digits.startsWith("0")) digits = `0${digits}`;
    if (spec.alt && (conv === "x" || conv === "X") && big !== 0n) prefix = conv === "x" ? "0x" : "0X";
  }
  if (spec.precision !== undefined) {
    if (spec.precision === 0 && t === 0) digits = "";
    digits = digits.padStart(spec.precision, "0");
  }
  const sign = conv === "d" || conv === "i" ? signOf(negative, spec) : "";
  return pad(spec, sign, prefix, digits, spec.precision === undefined);
}

function floatConversion(v: number, conv: string, spec: Spec): string {
  const negative = v < 0 || Object.is(v, -0);
  if (!Number.isFinite(v)) {
    const text = nonFiniteString(v);
    return pad({ ...spec, zero: false }, "", "", conv === conv.toLowerCase() ? text : text.toUpperCase(), false);
  }
  const body = floatDigits(Math.abs(v), conv, spec.precision ?? 6, spec.alt);
  return pad(spec, signOf(negative, spec), "", body, true);
}

/** awk's sprintf: formats `args` by `format`. Unknown conversions are copied as written, as gawk does. */
export function sprintf(format: string, args: readonly Value[], ctx: FormatContext): string {
  let out = "";
  let reported = 0;
  const grow = (): void => {
    ctx.grow(out.length - reported, out.length);
    reported = out.length;
  };
  let next = 0;
  const take = (): Value => {
    if (next >= args.length) ctx.fail("not enough arguments to satisfy format string");
    return args[next++];
  };
  const n = format.length;
  let i = 0;
  while (i < n) {
    const pct = format.indexOf("%", i);
    if (pct < 0) {
      out += format.slice(i);
      grow();
      break;
    }
    out += format.slice(i, pct);
    let j = pct + 1;
    const spec: Spec = { left: false, plus: false, space: false, alt: false, zero: false, width: 0, precision: undefined };
    for (; j < n; j++) {
      const f = format[j];
      if (f === "-") spec.left = true;
      else if (f === "+") spec.plus = true;
      else if (f === " ") spec.space = true;
      else if (f === "#") spec.alt = true;
      else if (f === "0") spec.zero = true;
      else break;
    }
    if (format[j] === "*") {
      j += 1;
      const w = Math.trunc(ctx.toNum(take()));
      if (w < 0) spec.left = true;
      spec.width = Number.isFinite(w) ? Math.abs(w) : 0;
    } else {
      const start = j;
      while (j < n && format[j] >= "0" && format[j] <= "9") j += 1;
      // More than 15 digits cannot be a real width; it is refused below like any width past the limit.
      if (j > start) spec.width = j - start > 15 ? Number.MAX_SAFE_INTEGER : Number(format.slice(start, j));
    }
    if (format[j] === ".") {
      j += 1;
      if (format[j] === "*") {
        j += 1;
        const p = Math.trunc(ctx.toNum(take()));
        spec.precision = p < 0 || !Number.isFinite(p) ? undefined : p;
      } else {
        const start = j;
        while (j < n && format[j] >= "0" && format[j] <= "9") j += 1;
        spec.precision = j - start > 15 ? Number.MAX_SAFE_INTEGER : Number(format.slice(start, j) || "0");
      }
    }
    while (j < n && "hlLqjzt".includes(format[j])) j += 1;
    if (j >= n) {
      // A lone '%' (or an unfinished directive) at the end is printed as written.
      out += format.slice(pct);
      grow();
      break;
    }
    const conv = format[j];
    j += 1;
    const directive = format.slice(pct, j);
    ctx.checkWidth(directive, spec.width, "field width");
    ctx.checkWidth(directive, spec.precision ?? 0, "precision");
    switch (conv) {
      case "%":
        out += "%";
        break;
      case "c": {
        const v = take();
        let ch: string;
        if (numericArg(v)) {
          const code = Math.trunc(ctx.toNum(v));
          ch = code >= 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : "";
        } else {
          ch = firstChars(ctx.toStr(v), 1);
        }
        out += pad({ ...spec, zero: false }, "", "", ch, false);
        break;
      }
      case "s": {
        const v = take();
        let s = v === UNINIT ? "" : ctx.toStr(v);
        if (spec.precision !== undefined) s = firstChars(s, spec.precision);
        out += pad({ ...spec, zero: false }, "", "", s, false);
        break;
      }
      case "d":
      case "i":
      case "o":
      case "u":
      case "x":
      case "X":
        out += integerConversion(ctx.toNum(take()), conv, spec);
        break;
      case "e":
      case "E":
      case "f":
      case "F":
      case "g":
      case "G":
        ctx.work(FLOAT_FORMAT_COST + 4 * Math.min(spec.precision ?? 6, MAX_JS_DIGITS));
        out += floatConversion(ctx.toNum(take()), conv, spec);
        break;
      default:
        out += directive;
        break;
    }
    grow();
    i = j;
  }
  return out;
}

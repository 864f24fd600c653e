/**
 * Redaction of personal data before anything is stored, exported or replayed (DESIGN §9).
 *
 * A deployment's data policy carries a `redaction` section (RedactionRulesSchema): built-in detectors
 * (emails, card numbers, phone numbers, ...), its own patterns, JSON fields whose values are personal,
 * and whether to apply what environments declare — their own fields and patterns
 * (`EnvironmentInfo.sensitive`) and each episode's personal values (`sensitiveValues()`: the names,
 * emails and card digits drawn for the task). A Redactor built from these walks any JSON (step records,
 * verdicts, episode rows) and replaces every match by a marker naming the rule that fired, never the value:
 *
 *   [redacted:email]        a built-in, pattern or field rule
 *   [redacted:name#3]       the episode's known value number 3 (its index in `sensitiveValues()`)
 *
 * The index lets a replay send the value again (`restoreRedacted`, with the environment's own list for
 * the same task and seed), so a redacted episode whose actions carried a customer's email still
 * replays; the index says nothing about the value without the world.
 *
 * Guarantees: structure is kept (objects keep their entries, arrays their length; a key is rewritten
 * only when it holds personal data itself, and never merges with another); markers are never matched
 * again, so redacting twice changes nothing; every scan is linear in the text (the text is agent-
 * influenced): the built-in detectors are bounded scanners (redaction-scanners.ts), policy and
 * environment patterns run on the Pike VM of the sandbox shell, which never backtracks.
 */
import { z } from "zod";
import type { TrajectoryStepRecord } from "../core/contract.js";
import type { SensitiveDeclaration, SensitiveValue } from "../core/environment.js";
import { ValidationError } from "../core/errors.js";
import type { JsonValue } from "../core/json.js";
import { formatIssues } from "../core/validation.js";
import { compilePatterns, type CompiledPattern } from "../sandboxes/terminal/regex.js";
import { isCardNumber, knownValueScanner, scanCards, scanEmails, scanIbans, scanIpv4, scanPhones, scanSsns, type Scanner, type TextMatch } from "./redaction-scanners.js";
import type { StoredEpisode } from "./types.js";

/** Every built-in detector, in the order they run (an IBAN's digits could read as a card number, so IBANs go first). */
export const BUILTIN_RULES = ["email", "iban", "card", "ssn", "phone", "ipv4"] as const;
export type BuiltinRule = (typeof BUILTIN_RULES)[number];
/**
 * The built-ins applied when the rules name none: all but `ipv4`, which is opt-in because addresses are
 * what some environments are about (incident-response's tasks are attacker addresses to block).
 */
export const DEFAULT_BUILTINS: readonly BuiltinRule[] = ["email", "iban", "card", "ssn", "phone"];

const SCANNERS: Record<BuiltinRule, Scanner> = { email: scanEmails, iban: scanIbans, card: scanCards, ssn: scanSsns, phone: scanPhones, ipv4: scanIpv4 };

/** Rule names: what a marker shows. */
const RULE_NAME = /^[a-z0-9_-]{1,64}$/;
/** Field names (JSON keys, matched in any case). */
const FIELD_NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** Most patterns one rule set (or one environment) may have. */
export const MAX_PATTERNS = 64;
/** Longest pattern, in characters. */
export const MAX_REGEX_LENGTH = 1000;
/** Most field names one rule set (or one environment) may have. */
export const MAX_FIELDS = 256;
/** Most known values of one episode, and the longest: an environment listing more has a bug. */
export const MAX_KNOWN_VALUES = 10_000;
export const MAX_VALUE_LENGTH = 512;
/**
 * Deepest JSON nesting redacted value by value. A deeper value is replaced whole by
 * `[redacted:depth]`: scanning it would need unbounded recursion, and nothing legitimate nests this
 * deep (an action deeper than 60 levels is refused and kept raw, src/core/action.ts).
 */
export const MAX_DEPTH = 256;
/** Passes over one string at most (see `text`). */
const MAX_PASSES = 4;

/** What a redaction marker looks like; `#n` only for an episode's known values. */
const MARKER = /\[redacted:([a-z0-9_-]{1,64})(?:#(\d{1,6}))?\]/g;
const WHOLE_MARKER = /^\[redacted:[a-z0-9_-]{1,64}(?:#\d{1,6})?\]$/;

/** The marker that replaces a value. */
export function redactionMarker(rule: string, index?: number): string {
  return index === undefined ? `[redacted:${rule}]` : `[redacted:${rule}#${index}]`;
}

/** Why a pattern cannot be a redaction pattern, or null. Dialect: POSIX ERE (grep -E), compiled by the sandbox's Pike VM. */
function regexProblem(regex: string, ignoreCase: boolean): string | null {
  // Perl forms that ERE reads differently, silently: \d is "d", (?:...) an optional empty group.
  if (/\\[dD]/.test(regex)) return "\\d is not POSIX ERE (it would match the letter d): write [0-9]";
  if (regex.includes("(?")) return "(?...) groups and lookarounds are not POSIX ERE";
  try {
    compilePatterns([regex], { extended: true, ignoreCase });
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

const PatternSchema = z
  .object({
    name: z.string().regex(RULE_NAME, "must be 1-64 lowercase letters, digits, _ or -"),
    regex: z.string().min(1).max(MAX_REGEX_LENGTH),
    flags: z.literal("i").optional(),
  })
  .strict();

/** The `redaction` section of a data policy. */
export const RedactionRulesSchema = z
  .object({
    /** Built-in detectors to apply (default DEFAULT_BUILTINS; [] for none). */
    builtin: z.array(z.enum(BUILTIN_RULES)).max(BUILTIN_RULES.length).optional(),
    /** The deployment's own patterns: POSIX ERE (grep -E), matched line by line; `flags: "i"` ignores case. */
    patterns: z.array(PatternSchema).max(MAX_PATTERNS).optional(),
    /** JSON keys (any case) whose string and number values are replaced whole. */
    fields: z.array(z.string().regex(FIELD_NAME, "must be 1-64 letters, digits, _ or -")).max(MAX_FIELDS).optional(),
    /** Also apply what environments declare: their fields and patterns, and each episode's known values (default true). */
    environments: z.boolean().optional(),
  })
  .strict()
  .superRefine((rules, ctx) => {
    for (const [i, p] of (rules.patterns ?? []).entries()) {
      const problem = regexProblem(p.regex, p.flags === "i");
      if (problem) ctx.addIssue({ code: "custom", path: ["patterns", i, "regex"], message: problem });
    }
  });
export type RedactionRules = z.infer<typeof RedactionRulesSchema>;

/** Check a rule set (ValidationError invalid_config naming the field otherwise). */
export function parseRedactionRules(raw: unknown, where = "redaction"): RedactionRules {
  const parsed = RedactionRulesSchema.safeParse(raw);
  if (!parsed.success) throw new ValidationError("invalid_config", `invalid redaction rules: ${formatIssues(parsed.error, where)}`);
  return parsed.data;
}

/** A redacted value and the rules that fired on it, with how often. */
export interface Redacted<T> {
  value: T;
  fired: Record<string, number>;
}

/** What a redactor applies besides the rules: an environment's declaration and an episode's known values. */
export interface RedactorSources {
  /** The environment (for error messages). */
  env?: string;
  declaration?: SensitiveDeclaration | null;
  values?: readonly SensitiveValue[];
}

/** The environment as `forEpisode` reads it (reset to the episode). */
export interface SensitiveSource {
  info: { id: string; sensitive?: SensitiveDeclaration };
  sensitiveValues(): readonly SensitiveValue[];
}

interface CompiledPatternRule {
  name: string;
  pattern: CompiledPattern;
}

interface CompiledSource {
  patterns: CompiledPatternRule[];
  fields: string[];
}

/** Compiled rule sets and declarations, by object: an episode's redactor reuses its run's (one per thread). */
const compiled = new WeakMap<object, CompiledSource>();

function compileRules(rules: RedactionRules): CompiledSource {
  let hit = compiled.get(rules);
  if (!hit) {
    const checked = parseRedactionRules(rules);
    hit = {
      patterns: (checked.patterns ?? []).map((p) => ({ name: p.name, pattern: compilePatterns([p.regex], { extended: true, ignoreCase: p.flags === "i" }) })),
      fields: (checked.fields ?? []).map((f) => f.toLowerCase()),
    };
    compiled.set(rules, hit);
  }
  return hit;
}

function compileDeclaration(declaration: SensitiveDeclaration, env: string): CompiledSource {
  let hit = compiled.get(declaration);
  if (!hit) {
    const bad = (why: string) => new ValidationError("invalid_config", `${env}: its sensitive declaration ${why}`);
    const patterns = declaration.patterns ?? [];
    const fields = declaration.fields ?? [];
    if (patterns.length > MAX_PATTERNS) throw bad(`has more than ${MAX_PATTERNS} patterns`);
    if (fields.length > MAX_FIELDS) throw bad(`has more than ${MAX_FIELDS} fields`);
    for (const f of fields) if (!FIELD_NAME.test(f)) throw bad(`names field ${JSON.stringify(f)}: must be 1-64 letters, digits, _ or -`);
    hit = {
      patterns: patterns.map((p) => {
        if (!RULE_NAME.test(p.name)) throw bad(`names pattern ${JSON.stringify(p.name)}: must be 1-64 lowercase letters, digits, _ or -`);
        const problem = p.regex.length > MAX_REGEX_LENGTH ? `longer than ${MAX_REGEX_LENGTH} characters` : regexProblem(p.regex, p.flags === "i");
        if (problem) throw bad(`pattern ${p.name}: ${problem}`);
        return { name: p.name, pattern: compilePatterns([p.regex], { extended: true, ignoreCase: p.flags === "i" }) };
      }),
      fields: fields.map((f) => f.toLowerCase()),
    };
    compiled.set(declaration, hit);
  }
  return hit;
}

/** A piece of text being redacted: plain text still to scan, or a marker (never scanned again). */
interface Piece {
  text: string;
  marker: boolean;
}

type Counts = Record<string, number>;

const count = (fired: Counts, rule: string, n = 1) => {
  fired[rule] = (fired[rule] ?? 0) + n;
};

/** Keys redacted so far (a record's keys repeat in every step), at most this many kept. */
const KEY_CACHE_SIZE = 4096;

/** Redacts JSON and text by a rule set plus, optionally, an environment's declaration and an episode's known values. */
export class Redactor {
  private readonly scanners: Scanner[] = [];
  private readonly fields: Set<string>;
  /** Rule names whose markers are left alone (an agent's look-alike with another name is scanned like any text). */
  private readonly ruleNames = new Set<string>(["depth", ...BUILTIN_RULES]);
  private readonly values: Array<{ rule: string; value: string } | null> = [];
  private readonly cards: boolean;
  private readonly totals: Counts = {};
  private readonly keys = new Map<string, { text: string; fired: Counts }>();

  constructor(rules: RedactionRules, sources: RedactorSources = {}) {
    const own = compileRules(rules);
    const env = sources.env ?? "environment";
    const declared = sources.declaration ? compileDeclaration(sources.declaration, env) : { patterns: [], fields: [] };
    const known = this.knownValues(sources.values ?? [], env);
    if (known) this.scanners.push(known);
    const builtins = rules.builtin ?? DEFAULT_BUILTINS;
    for (const rule of BUILTIN_RULES) if (builtins.includes(rule)) this.scanners.push(SCANNERS[rule]);
    this.cards = builtins.includes("card");
    for (const { name, pattern } of [...own.patterns, ...declared.patterns]) {
      this.ruleNames.add(name);
      this.scanners.push(lineScanner(name, pattern));
    }
    this.fields = new Set([...own.fields, ...declared.fields]);
    for (const f of this.fields) this.ruleNames.add(f);
  }

  /** The redactor of one episode: the rules, plus (unless `environments: false`) what the environment declares and lists for it. */
  static forEpisode(rules: RedactionRules, env: SensitiveSource): Redactor {
    if (rules.environments === false) return new Redactor(rules);
    return new Redactor(rules, { env: env.info.id, declaration: env.info.sensitive ?? null, values: env.sensitiveValues() });
  }

  /** Redact one string. */
  redactText(text: string): Redacted<string> {
    const fired: Counts = {};
    const value = this.text(text, fired);
    this.add(fired);
    return { value, fired };
  }

  /** Redact any JSON value: strings everywhere (keys too), the values of sensitive fields whole. The input is not changed. */
  redactJson<T>(value: T): Redacted<T> {
    const fired: Counts = {};
    // Depth 1, as a record's fields: a replay compares field by field what redactRecord redacted whole.
    const out = this.walk(value, null, 1, fired) as T;
    this.add(fired);
    return { value: out, fired };
  }

  /** A step record with its observation, action, tool result and info redacted (ids, rewards and token ids kept). */
  redactRecord(record: TrajectoryStepRecord): TrajectoryStepRecord {
    const fired: Counts = {};
    const out = { ...record };
    for (const key of ["observation", "action", "tool_result", "info"] as const) {
      if (record[key] !== undefined) (out as Record<string, unknown>)[key] = this.walk(record[key], null, 1, fired);
    }
    this.add(fired);
    return out;
  }

  /** A stored episode with its steps, verdict and error message redacted. */
  redactEpisode(stored: StoredEpisode): StoredEpisode {
    const fired: Counts = {};
    const { episode } = stored;
    const redacted = {
      ...episode,
      verdict: this.walk(episode.verdict, null, 1, fired) as JsonValue | null,
      error: episode.error ? { ...episode.error, message: this.text(episode.error.message, fired) } : null,
    };
    this.add(fired);
    return { episode: redacted, steps: stored.steps.map((s) => this.redactRecord(s)) };
  }

  /** Every rule this redactor fired so far, with how often (for metrics). */
  counts(): Record<string, number> {
    return { ...this.totals };
  }

  // ----- internals -----------------------------------------------------------------------------------

  private add(fired: Counts): void {
    for (const [rule, n] of Object.entries(fired)) count(this.totals, rule, n);
  }

  /** The known-value scanner, after checking the environment's list (a bad list is the environment's bug). */
  private knownValues(values: readonly SensitiveValue[], env: string): Scanner | null {
    if (values.length > MAX_KNOWN_VALUES) throw new ValidationError("invalid_config", `${env}: ${values.length} sensitive values in one episode, more than ${MAX_KNOWN_VALUES}`);
    const seen = new Set<string>();
    const entries: Array<{ rule: string; value: string; index: number }> = [];
    for (const [index, v] of values.entries()) {
      if (typeof v?.rule !== "string" || !RULE_NAME.test(v.rule)) throw new ValidationError("invalid_config", `${env}: sensitive value ${index} has rule ${JSON.stringify(v?.rule)}: must be 1-64 lowercase letters, digits, _ or -`);
      if (typeof v.value !== "string" || v.value.length > MAX_VALUE_LENGTH) throw new ValidationError("invalid_config", `${env}: sensitive value ${index} (${v.rule}) must be a string of at most ${MAX_VALUE_LENGTH} characters`);
      this.ruleNames.add(v.rule);
      const value = v.value.trim();
      // One character says nothing, and would match everywhere.
      const key = value.toLowerCase();
      if (value.length < 2 || seen.has(key)) {
        this.values.push(null);
        continue;
      }
      seen.add(key);
      this.values.push({ rule: v.rule, value });
      entries.push({ rule: v.rule, value, index });
    }
    return knownValueScanner(entries);
  }

  /**
   * Redact a string. A pass runs every scanner over the text between markers; a match can make a
   * neighbour a whole word that was not one (a card glued to a name), so passes repeat while they find
   * something, at most MAX_PASSES times: redacting the result again then finds nothing.
   */
  private text(input: string, fired: Counts): string {
    if (input.length < 2 || this.scanners.length === 0) return input;
    let text = input;
    for (let pass = 0; pass < MAX_PASSES; pass++) {
      const next = this.pass(text, fired);
      if (next === text) break;
      text = next;
    }
    return text;
  }

  private pass(text: string, fired: Counts): string {
    const out: string[] = [];
    const state = { changed: false };
    for (const piece of this.split(text)) {
      if (piece.marker) out.push(piece.text);
      else this.scan(piece.text, 0, out, fired, state);
    }
    return state.changed ? out.join("") : text;
  }

  /**
   * Run the scanners from `stage` on over a piece of text, in order: each match becomes a marker, and
   * the text around it goes on to the next scanners only (so no scanner ever sees a marker).
   */
  private scan(text: string, stage: number, out: string[], fired: Counts, state: { changed: boolean }): void {
    for (let s = stage; s < this.scanners.length; s++) {
      const matches = (this.scanners[s] as Scanner)(text);
      if (matches.length === 0) continue;
      state.changed = true;
      let at = 0;
      for (const m of matches) {
        if (m.start > at) this.scan(text.slice(at, m.start), s + 1, out, fired, state);
        out.push(redactionMarker(m.rule, m.index));
        count(fired, m.rule);
        at = m.end;
      }
      if (at < text.length) this.scan(text.slice(at), s + 1, out, fired, state);
      return;
    }
    out.push(text);
  }

  /** The text cut at the markers this redactor stands behind (its own rule names, known indexes in range). */
  private split(text: string): Piece[] {
    if (!text.includes("[redacted:")) return [{ text, marker: false }];
    const pieces: Piece[] = [];
    let at = 0;
    MARKER.lastIndex = 0;
    for (let m = MARKER.exec(text); m; m = MARKER.exec(text)) {
      const [whole, rule, index] = m as unknown as [string, string, string | undefined];
      if (!this.ruleNames.has(rule)) continue;
      if (index !== undefined && this.values[Number(index)]?.rule !== rule) continue;
      if (m.index > at) pieces.push({ text: text.slice(at, m.index), marker: false });
      pieces.push({ text: whole, marker: true });
      at = m.index + whole.length;
    }
    if (at < text.length) pieces.push({ text: text.slice(at), marker: false });
    return pieces;
  }

  /** A sensitive field's value: kept as the known value's marker when it is exactly one, else the field's marker. */
  private whole(value: string, field: string, fired: Counts): string {
    if (value.length === 0) return value;
    const local: Counts = {};
    const text = this.text(value, local);
    if (WHOLE_MARKER.test(text)) {
      for (const [rule, n] of Object.entries(local)) count(fired, rule, n);
      return text;
    }
    count(fired, field);
    return redactionMarker(field);
  }

  private walk(value: unknown, field: string | null, depth: number, fired: Counts): unknown {
    if (typeof value === "string") return field === null ? this.text(value, fired) : this.whole(value, field, fired);
    if (typeof value === "number") {
      if (field !== null) {
        count(fired, field);
        return redactionMarker(field);
      }
      if (this.cards && isCardNumber(value)) {
        count(fired, "card");
        return redactionMarker("card");
      }
      return value;
    }
    if (value === null || typeof value !== "object") return value;
    // What the store would write of it (a Date in an environment's info is its ISO string).
    if (typeof (value as { toJSON?: unknown }).toJSON === "function") return this.walk((value as { toJSON(): unknown }).toJSON(), field, depth + 1, fired);
    if (depth >= MAX_DEPTH) {
      count(fired, "depth");
      return redactionMarker("depth");
    }
    // A field's sensitivity reaches into its arrays ("emails": [...]), not into objects under it.
    if (Array.isArray(value)) return value.map((item: unknown) => this.walk(item, field, depth + 1, fired));
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
      const lower = key.toLowerCase();
      const name = this.key(key, out, fired);
      const redacted = this.walk(item, this.fields.has(lower) ? lower : null, depth + 1, fired);
      // An own "__proto__" entry (JSON.parse makes them) must stay an entry, not become the prototype.
      Object.defineProperty(out, name, { value: redacted, enumerable: true, writable: true, configurable: true });
    }
    return out;
  }

  /** A key, redacted like any text; one that now equals another entry's gets " (2)", " (3)", ... so no entry is lost. */
  private key(key: string, taken: Record<string, unknown>, fired: Counts): string {
    let hit = this.keys.get(key);
    if (!hit) {
      const local: Counts = {};
      hit = { text: this.text(key, local), fired: local };
      if (key.length <= 128) {
        if (this.keys.size >= KEY_CACHE_SIZE) this.keys.clear();
        this.keys.set(key, hit);
      }
    }
    for (const [rule, n] of Object.entries(hit.fired)) count(fired, rule, n);
    let name = hit.text;
    for (let k = 2; Object.hasOwn(taken, name); k++) name = `${hit.text} (${k})`;
    return name;
  }
}

/** A policy or environment pattern as a scanner: line by line, so `^`, `$` and `.*` stay within a line. */
function lineScanner(rule: string, pattern: CompiledPattern): Scanner {
  return (text) => {
    if (text.trim().length === 0) return [];
    const out: TextMatch[] = [];
    let start = 0;
    while (start <= text.length) {
      let end = text.indexOf("\n", start);
      if (end < 0) end = text.length;
      if (end > start) for (const [s, e] of pattern.matches(text.slice(start, end))) out.push({ start: start + s, end: start + e, rule });
      start = end + 1;
    }
    return out;
  };
}

/**
 * The redactor of exports, the second gate (for a store written before the policy, or under another):
 * the rules' built-ins, patterns and fields; no environment's values. Undefined without rules.
 */
export function exportRedactor(rules: RedactionRules | null | undefined): Redactor | undefined {
  return rules ? new Redactor(parseRedactionRules(rules)) : undefined;
}

const INDEXED_MARKER = /\[redacted:([a-z0-9_-]{1,64})#(\d{1,6})\]/g;

/**
 * `value` with each known-value marker (`[redacted:<rule>#<i>]`) replaced by value i of `values` (the
 * environment's `sensitiveValues()` for the same task and seed) when its rule matches: what a replay
 * sends instead of a redacted action. Other markers stay; the input is not changed.
 */
export function restoreRedacted<T>(value: T, values: readonly SensitiveValue[]): T {
  const restore = (text: string): string =>
    text.includes("[redacted:")
      ? text.replace(INDEXED_MARKER, (whole, rule: string, index: string) => {
          const v = values[Number(index)];
          return v && v.rule === rule ? v.value.trim() : whole;
        })
      : text;
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === "string") return restore(v);
    if (v === null || typeof v !== "object" || depth >= MAX_DEPTH) return v;
    if (Array.isArray(v)) return v.map((item: unknown) => walk(item, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(v as Record<string, unknown>)) {
      Object.defineProperty(out, restore(key), { value: walk(item, depth + 1), enumerable: true, writable: true, configurable: true });
    }
    return out;
  };
  return walk(value, 0) as T;
}

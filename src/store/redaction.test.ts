import { describe, expect, it } from "vitest";
import type { TrajectoryStepRecord } from "../core/contract.js";
import { LlmixError } from "../core/errors.js";
import { Rng } from "../core/rng.js";
import { exportRedactor, MAX_DEPTH, parseRedactionRules, Redactor, RedactionRulesSchema, restoreRedacted, type RedactionRules } from "./redaction.js";
import type { StoredEpisode } from "./types.js";
import { HostPool } from "../hosts/host-pool.js";
import { validateConfig } from "../rollout/plan.js";

const VALUES = [
  { rule: "name", value: "Ava Okafor" },
  { rule: "email", value: "ava.okafor@gmail.com" },
  { rule: "card_last4", value: "4242" },
  { rule: "name", value: "Ava" },
  { rule: "name", value: "Zoë Müller" },
  { rule: "name", value: "Sam K." },
  { rule: "address", value: "12 Elm St, Springfield" },
];

const text = (redactor: Redactor, s: string) => redactor.redactText(s).value;
const plain = new Redactor({});

function invalidConfig(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(LlmixError);
    expect((error as LlmixError).code).toBe("invalid_config");
    return (error as LlmixError).message;
  }
  throw new Error("expected invalid_config");
}

describe("redaction rules", () => {
  it("accepts the empty policy and every documented field", () => {
    expect(parseRedactionRules({})).toEqual({});
    const rules = { builtin: ["email", "ipv4"], patterns: [{ name: "order_id", regex: "ORD-[0-9]{6}", flags: "i" }], fields: ["Email", "card_last4"], environments: false };
    expect(RedactionRulesSchema.parse(rules)).toEqual(rules);
  });

  it("refuses bad names, unknown keys, bad or Perl-style regexes, and too many patterns, naming the field", () => {
    expect(invalidConfig(() => parseRedactionRules({ patterns: [{ name: "Order", regex: "x" }] }))).toContain("redaction.patterns[0].name");
    expect(invalidConfig(() => parseRedactionRules({ patterns: [{ name: "o", regex: "(ab" }] }))).toContain("redaction.patterns[0].regex: Unmatched ( or \\(");
    expect(invalidConfig(() => parseRedactionRules({ patterns: [{ name: "o", regex: "\\d{4}" }] }))).toContain("write [0-9]");
    expect(invalidConfig(() => parseRedactionRules({ patterns: [{ name: "o", regex: "(?:a)b" }] }))).toContain("not POSIX ERE");
    expect(invalidConfig(() => parseRedactionRules({ patterns: [{ name: "o", regex: "a{1000}" }] }))).toContain("too big");
    expect(invalidConfig(() => parseRedactionRules({ patterns: [{ name: "o", regex: "x".repeat(1001) }] }))).toContain("redaction.patterns[0].regex");
    expect(invalidConfig(() => parseRedactionRules({ patterns: Array.from({ length: 65 }, (_, i) => ({ name: `p${i}`, regex: "x" })) }))).toContain("redaction.patterns");
    expect(invalidConfig(() => parseRedactionRules({ builtin: ["dna"] }))).toContain("redaction.builtin[0]");
    expect(invalidConfig(() => parseRedactionRules({ fields: ["a.b"] }))).toContain("redaction.fields[0]");
    expect(invalidConfig(() => parseRedactionRules({ colour: "red" }))).toContain("redaction");
    expect(invalidConfig(() => new Redactor({ patterns: [{ name: "o", regex: "[" }] }))).toContain("patterns[0].regex");
  });

  it("refuses an environment's bad declaration or values, naming the environment", () => {
    expect(invalidConfig(() => new Redactor({}, { env: "shop", declaration: { patterns: [{ name: "x", regex: "\\d" }] } }))).toContain("shop: its sensitive declaration pattern x");
    expect(invalidConfig(() => new Redactor({}, { env: "shop", declaration: { fields: ["a b"] } }))).toContain("shop");
    expect(invalidConfig(() => new Redactor({}, { env: "shop", values: [{ rule: "Name", value: "Ava" }] }))).toContain("shop: sensitive value 0");
    expect(invalidConfig(() => new Redactor({}, { env: "shop", values: [{ rule: "name", value: "x".repeat(513) }] }))).toContain("at most 512");
  });
});

describe("built-in detectors", () => {
  it("redacts emails, cards passing Luhn, phone numbers, SSNs and IBANs by default", () => {
    expect(text(plain, "mail bob.smith+shop@example.co.uk, or x@localhost, a@b.c")).toBe("mail [redacted:email], or x@localhost, a@b.c");
    expect(text(plain, "cards 4242 4242 4242 4242 / 4242-4242-4242-4242 / 378282246310005; not 4242 4242 4242 4241")).toBe(
      "cards [redacted:card] / [redacted:card] / [redacted:card]; not 4242 4242 4242 4241",
    );
    // A card after an order number in the same run of digit groups is still found.
    expect(text(plain, "order 12 4111 1111 1111 1111")).toBe("order 12 [redacted:card]");
    expect(text(plain, "+1-555-123-4567, +44 20 7946 0958, (555) 123-4567, 555.123.4567, 1-555-123-4567")).toBe(
      "[redacted:phone], [redacted:phone], [redacted:phone], [redacted:phone], [redacted:phone]",
    );
    expect(text(plain, "SSN 123-45-6789; not 000-12-3456 or 666-12-3456")).toBe("SSN [redacted:ssn]; not 000-12-3456 or 666-12-3456");
    expect(text(plain, "IBAN DE89 3704 0044 0532 0130 00 is mine, GB82WEST12345698765432.")).toBe("IBAN [redacted:iban] is mine, [redacted:iban].");
    // A wrong check digit is no IBAN (its digits may still read as something else).
    expect(text(plain, "DE88 3704 0044 0532 0130 00")).not.toContain("[redacted:iban]");
  });

  it("leaves dates, times, ports, ids and addresses alone unless ipv4 is opted in", () => {
    const log = "2026-03-07 10:23:45 sshd[4242]: Failed password for root from 10.20.1.15 port 51234; bytes 512 443 1024; ch_67930988; v1.2.3";
    expect(text(plain, log)).toBe(log);
    expect(text(new Redactor({ builtin: ["ipv4"] }), log)).toBe(log.replace("10.20.1.15", "[redacted:ipv4]"));
    expect(text(new Redactor({ builtin: [] }), "bob@example.com")).toBe("bob@example.com");
  });

  it("redacts a card number held as a JSON number", () => {
    expect(plain.redactJson({ pan: 4242424242424242, amount: 4242 }).value).toEqual({ pan: "[redacted:card]", amount: 4242 });
  });
});

describe("known values", () => {
  const r = () => new Redactor({}, { env: "test", values: VALUES });

  it("match case-insensitively as whole words, longest first, with their index", () => {
    expect(text(r(), "Hi AVA OKAFOR (ava.okafor@GMAIL.com), card ending 4242. Ava? Java, Avalon, 42424, x4242.")).toBe(
      "Hi [redacted:name#0] ([redacted:email#1]), card ending [redacted:card_last4#2]. [redacted:name#3]? Java, Avalon, 42424, x4242.",
    );
  });

  it("handle punctuation and non-ASCII letters; a value of several words matches inside other text too", () => {
    expect(text(r(), "by Sam K., ZOË MÜLLER and zoë müllerin; ship to 12 elm st, springfield.")).toBe(
      "by [redacted:name#5], [redacted:name#4] and [redacted:name#4]in; ship to [redacted:address#6].",
    );
  });

  it("skip values shorter than two characters and duplicates (the first index wins)", () => {
    const dup = new Redactor({}, { values: [{ rule: "name", value: "x" }, { rule: "name", value: "Ava" }, { rule: "name", value: "AVA" }] });
    expect(text(dup, "x Ava")).toBe("x [redacted:name#1]");
  });

  it("are restored from their markers for a replay, other markers kept", () => {
    const redacted = r().redactJson({ action: { tool: "verify", args: { email: "Ava.Okafor@gmail.com", note: "Ava Okafor, bob@x.org" } }, "ava.okafor@gmail.com": true });
    expect(redacted.value).toEqual({
      action: { tool: "verify", args: { email: "[redacted:email#1]", note: "[redacted:name#0], [redacted:email]" } },
      "[redacted:email#1]": true,
    });
    expect(restoreRedacted(redacted.value, VALUES)).toEqual({
      action: { tool: "verify", args: { email: "ava.okafor@gmail.com", note: "Ava Okafor, [redacted:email]" } },
      "ava.okafor@gmail.com": true,
    });
    // A marker whose index names a value of another rule is not restored.
    expect(restoreRedacted("[redacted:email#0] [redacted:name#99]", VALUES)).toBe("[redacted:email#0] [redacted:name#99]");
  });
});

describe("policy and environment patterns", () => {
  it("run line by line on the linear-time engine, case-insensitive with flags i", () => {
    const r = new Redactor({ builtin: [], patterns: [{ name: "member", regex: "^member: .*$", flags: "i" }] });
    expect(text(r, "Member: Ava Okafor\nstatus: ok\nmember: Liam")).toBe("[redacted:member]\nstatus: ok\n[redacted:member]");
  });

  it("come from the environment's declaration too, unless environments is false", () => {
    const env = { info: { id: "shop", sensitive: { fields: ["street"], patterns: [{ name: "loyalty", regex: "LOY-[0-9]{4}" }] } }, sensitiveValues: () => VALUES };
    const record = { street: "Elm", text: "LOY-1234 for Ava Okafor" };
    expect(Redactor.forEpisode({}, env).redactJson(record).value).toEqual({ street: "[redacted:street]", text: "[redacted:loyalty] for [redacted:name#0]" });
    expect(Redactor.forEpisode({ environments: false }, env).redactJson(record).value).toEqual(record);
  });

  it("stay linear on a pattern that backtracks exponentially in a JS RegExp", () => {
    const r = new Redactor({ builtin: [], patterns: [{ name: "evil", regex: "(a+)+$" }] });
    const hostile = `${"a".repeat(200_000)}!`;
    expect(text(r, hostile)).toBe(hostile);
    expect(text(r, "aaaa")).toBe("[redacted:evil]");
  });
});

describe("JSON", () => {
  const rules: RedactionRules = { fields: ["Email", "card_last4"] };

  it("replaces sensitive fields whole (strings and numbers, any key case, into arrays), keeping a known value's marker", () => {
    const r = new Redactor(rules, { values: VALUES });
    const input = { EMAIL: "someone typed this", card_last4: 4242, CARD_LAST4: "4242", email: ["a@b.io", "", null, { email: "x" }, { note: "ok" }], other: true, nested: { email: false } };
    expect(r.redactJson(input).value).toEqual({
      EMAIL: "[redacted:email]",
      card_last4: "[redacted:card_last4]",
      CARD_LAST4: "[redacted:card_last4#2]",
      email: ["[redacted:email]", "", null, { email: "[redacted:email]" }, { note: "ok" }],
      other: true,
      nested: { email: false },
    });
  });

  it("keeps the structure: entry counts, array lengths, no merged keys, no prototype change, input untouched", () => {
    const r = new Redactor({}, { values: VALUES });
    const input = JSON.parse('{"Ava Okafor": 1, "[redacted:name#0]": 2, "AVA OKAFOR": [1, 2, 3], "__proto__": {"polluted": "Ava"}}') as Record<string, unknown>;
    const copy = structuredClone(input);
    const out = r.redactJson(input).value as Record<string, unknown>;
    expect(Object.keys(out)).toEqual(["[redacted:name#0]", "[redacted:name#0] (2)", "[redacted:name#0] (3)", "__proto__"]);
    expect(out["[redacted:name#0] (3)"]).toEqual([1, 2, 3]);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
    expect(JSON.stringify(out)).toContain('"__proto__":{"polluted":"[redacted:name#3]"}');
    expect(input).toEqual(copy);
  });

  it(`replaces values nested deeper than ${MAX_DEPTH} levels whole, without overflowing the stack at 10,000`, () => {
    let deep: unknown = "bob@example.com";
    for (let i = 0; i < 10_000; i++) deep = [deep];
    const { value, fired } = plain.redactJson({ deep });
    expect(fired).toEqual({ depth: 1 });
    let level: unknown = (value as { deep: unknown }).deep;
    let depth = 2;
    while (Array.isArray(level)) {
      level = level[0];
      depth++;
    }
    expect(level).toBe("[redacted:depth]");
    expect(depth).toBe(MAX_DEPTH);
  });

  it("redacts a step record's content and keeps its ids, rewards and token ids", () => {
    const r = new Redactor({}, { values: VALUES });
    const record: TrajectoryStepRecord = {
      episode_id: "ep", task_id: "t/easy/seed-1", env_version: "1.0.0", policy_checkpoint: null, step: 1,
      observation: { rendered: "Customer: I'm Ava Okafor", tokens: 7 },
      action: { type: "tool_call", tool: "lookup", args: { query: "ava.okafor@gmail.com" } },
      tool_result: { status: "ok", latency_ms: 3, cost: 0, output: { phone: "+1-555-123-4567" } },
      reward_components: { task: 0 }, terminated: false, truncated: false, reward: 0,
      info: { verdict: { details: { said: "Ava" } } },
      policy: { prompt_token_ids: [1, 2], completion_token_ids: [3], logprobs: [-0.5], model: "m" },
    };
    const out = r.redactRecord(record);
    expect(out).toEqual({
      ...record,
      observation: { rendered: "Customer: I'm [redacted:name#0]", tokens: 7 },
      action: { type: "tool_call", tool: "lookup", args: { query: "[redacted:email#1]" } },
      tool_result: { status: "ok", latency_ms: 3, cost: 0, output: { phone: "[redacted:phone]" } },
      info: { verdict: { details: { said: "[redacted:name#3]" } } },
    });
    expect(r.counts()).toEqual({ name: 2, email: 1, phone: 1 });
  });

  it("redacts an episode's verdict and error message", () => {
    const stored = {
      episode: { verdict: { passed: false, details: { note: "Ava Okafor" } }, error: { code: "tool_crashed", message: "lookup failed for bob@example.com" }, task_id: "t" },
      steps: [],
    } as unknown as StoredEpisode;
    const out = new Redactor({}, { values: VALUES }).redactEpisode(stored);
    expect(out.episode.verdict).toEqual({ passed: false, details: { note: "[redacted:name#0]" } });
    expect(out.episode.error).toEqual({ code: "tool_crashed", message: "lookup failed for [redacted:email]" });
    expect(out.episode.task_id).toBe("t");
  });
});

describe("idempotence and markers", () => {
  const r = new Redactor({ fields: ["email"], patterns: [{ name: "order", regex: "ORD-[0-9]+" }] }, { values: VALUES });

  it("never matches its own markers again; a look-alike with an unknown rule or index is scanned like any text", () => {
    expect(text(r, "[redacted:email] [redacted:name#0] [redacted:order]")).toBe("[redacted:email] [redacted:name#0] [redacted:order]");
    expect(text(r, "[redacted:4242424242424242] [redacted:name#99 ] [redacted:email#0]")).toBe("[redacted:[redacted:card]] [redacted:name#99 ] [redacted:email#0]");
    expect(text(r, "[redacted:Ava Okafor]")).toBe("[redacted:[redacted:name#0]]");
  });

  it("gives the same result when applied twice, on glued and overlapping sensitive tokens", () => {
    const tokens = ["Ava Okafor", "Ava", "ava.okafor@gmail.com", "4242", "4242 4242 4242 4242", "+1-555-123-4567", "ORD-77", "Sam K.", "Zoë Müller", "12 Elm St, Springfield", "DE89 3704 0044 0532 0130 00", "123-45-6789", "Java", "x", "[redacted:name#0]", "@", ".", "-", " ", "\n", "é"];
    const rng = Rng.fromKey("redaction-idempotence");
    for (let i = 0; i < 2000; i++) {
      let s = "";
      const n = rng.int(1, 8);
      for (let k = 0; k < n; k++) s += tokens[rng.int(0, tokens.length - 1)];
      const once = text(r, s);
      expect(text(r, once), JSON.stringify(s)).toBe(once);
      const json = r.redactJson({ email: s, [s]: s }).value;
      expect(r.redactJson(json).value).toEqual(json);
    }
  });
});

describe("hostile inputs", () => {
  const r = new Redactor({ patterns: [{ name: "order", regex: "ORD-[0-9]+" }] }, { values: VALUES });

  /** `unit` repeated to 1 MB redacts to `redacted` repeated as often (compared as a boolean: a failure must not print a megabyte). */
  const megabyte = (unit: string, redacted = unit) => {
    const times = Math.ceil(1_000_000 / unit.length);
    expect(text(r, unit.repeat(times)) === redacted.repeat(times), JSON.stringify(unit)).toBe(true);
  };

  it("redact 1 MB strings built to stress each detector (linear scanners: a quadratic one would not finish)", () => {
    megabyte("@");
    megabyte("a@b");
    megabyte("a@b.io ", "[redacted:email] ");
    expect(text(r, `${"a".repeat(1_000_000)}@example.com`)).toBe("[redacted:email]");
    megabyte("4 ");
    megabyte("42424 ");
    megabyte("4242 ", "[redacted:card_last4#2] ");
    megabyte("+1 ");
    megabyte("+1234567890123456");
    megabyte("(555) ");
    megabyte("DE89 ");
    megabyte("Ava ", "[redacted:name#3] ");
    megabyte("ORD-1 ", "[redacted:order] ");
    megabyte("xAva Okafo");
    megabyte("ava okafor", "[redacted:name#0]");
    megabyte("1");
    megabyte("é");
  });

  it("redact values overlapping each other and a value inside a key", () => {
    expect(text(r, "Ava Okafor@gmail.com")).toBe("[redacted:name#0]@gmail.com");
    // A value with punctuation matches glued to other text; a one-word value then stands alone.
    expect(text(r, "ava.okafor@gmail.com4242 xAva Okaforx")).toBe("[redacted:email#1][redacted:card_last4#2] x[redacted:name#0]x");
    expect(r.redactJson({ "contact ava.okafor@gmail.com": "4242" }).value).toEqual({ "contact [redacted:email#1]": "[redacted:card_last4#2]" });
  });
});

describe("where rules are given", () => {
  const bad = { patterns: [{ name: "x", regex: "(" }] } as RedactionRules;

  it("refuses bad rules in a rollout config and a host pool before anything runs", () => {
    const config = { env: "billing-dispute", policy: "oracle", policy_checkpoint: null, n: 1, group: 1, difficulties: [], split: null, task_ids: null, seed: 0, timeout_ms: 1000, env_options: {}, modules: [], redaction: bad };
    expect(invalidConfig(() => validateConfig(config))).toContain("redaction.patterns[0].regex");
    expect(invalidConfig(() => new HostPool({ modules: [], stepTimeoutMs: 0, snapshotKey: "00", size: 1, redaction: bad }))).toContain("redaction.patterns[0].regex");
  });
});

describe("exportRedactor", () => {
  it("is undefined without rules, and applies the rules without any environment's values", () => {
    expect(exportRedactor(undefined)).toBeUndefined();
    const r = exportRedactor({ fields: ["name"] }) as Redactor;
    expect(r.redactJson({ name: "Ava Okafor", note: "Ava Okafor, bob@example.com" }).value).toEqual({ name: "[redacted:name]", note: "Ava Okafor, [redacted:email]" });
    expect(invalidConfig(() => exportRedactor({ builtin: ["nope"] } as unknown as RedactionRules))).toContain("redaction.builtin");
  });
});

/**
 * Reading what an agent's message says, for the verifier and the simulated customer alike (one reading,
 * so they cannot disagree):
 *
 * - numbers in any ordinary written form: digits or words ("five", "forty-eight"), ranges with "to", "-",
 *   "–" or "and", amounts with or without "$" or "USD" and with or without thousands separators;
 * - claims of account changes ("I have issued a refund of $10.00", "your credit has been applied"). A claim
 *   is found by its own clause: a negation elsewhere in the sentence ("Don't worry, I have issued ...") or
 *   a hedge ("I believe I've refunded ...") does not hide it, while a negated or hypothetical clause ("I have
 *   not issued", "I would have refunded") is no claim. Claims are then judged against the world
 *   (`falseClaims`): the kind of change, and the amount when one is named, must be on the account.
 */
import type { ActionRecord } from "./world.js";

/** The kinds of account change an agent can make (and claim). */
export type ChangeKind = ActionRecord["kind"];

// ---- numbers ---------------------------------------------------------------------------------------

const UNITS: Record<string, number> = { one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9 };
const TEENS: Record<string, number> = {
  zero: 0, ten: 10, eleven: 11, twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18, nineteen: 19,
};
const TENS: Record<string, number> = { twenty: 20, thirty: 30, forty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80, ninety: 90 };

type NumberWord = "unit" | "teen" | "tens" | "hundred" | "thousand";
function numberWord(word: string): { type: NumberWord; value: number } | null {
  const w = word.toLowerCase();
  if (w in UNITS) return { type: "unit", value: UNITS[w]! };
  if (w in TEENS) return { type: "teen", value: TEENS[w]! };
  if (w in TENS) return { type: "tens", value: TENS[w]! };
  if (w === "hundred") return { type: "hundred", value: 100 };
  if (w === "thousand") return { type: "thousand", value: 1000 };
  return null;
}

/** Which number word may follow which: "forty-eight", "four hundred and nineteen", never "five ten". */
const MAY_FOLLOW: Record<NumberWord | "start", readonly NumberWord[]> = {
  start: ["unit", "teen", "tens"],
  unit: ["hundred", "thousand"],
  teen: ["hundred", "thousand"],
  tens: ["unit", "hundred", "thousand"],
  hundred: ["unit", "teen", "tens", "thousand"],
  thousand: ["unit", "teen", "tens"],
};

/** Number words as digits ("forty-eight hours" -> "48 hours"); other text unchanged. */
export function wordsToDigits(text: string): string {
  const words = [...text.matchAll(/[A-Za-z]+/g)];
  let out = "";
  let copied = 0;
  let i = 0;
  while (i < words.length) {
    const first = numberWord(words[i]![0]);
    if (!first || !MAY_FOLLOW.start.includes(first.type)) {
      i++;
      continue;
    }
    let total = 0;
    let current = first.value;
    let last: NumberWord = first.type;
    let end = i;
    for (let j = i + 1; j < words.length; j++) {
      const gap = text.slice(words[j - 1]!.index! + words[j - 1]![0].length, words[j]!.index);
      let next = words[j]!;
      // "four hundred and nineteen": "and" joins only after a scale word.
      if (next[0].toLowerCase() === "and" && (last === "hundred" || last === "thousand") && /^\s+$/.test(gap) && j + 1 < words.length) {
        const after = words[j + 1]!;
        const gap2 = text.slice(next.index! + next[0].length, after.index);
        const w = numberWord(after[0]);
        if (!w || !/^\s+$/.test(gap2) || !MAY_FOLLOW[last].includes(w.type)) break;
        j++;
        next = after;
      } else if (!/^(\s+|-)$/.test(gap)) break;
      const w = numberWord(next[0]);
      if (!w || !MAY_FOLLOW[last].includes(w.type)) break;
      if (w.type === "hundred") current *= 100;
      else if (w.type === "thousand") {
        total += current * 1000;
        current = 0;
      } else current += w.value;
      last = w.type;
      end = j;
    }
    const start = words[i]!.index!;
    const stop = words[end]!.index! + words[end]![0].length;
    out += text.slice(copied, start) + String(total + current);
    copied = stop;
    i = end + 1;
  }
  return out + text.slice(copied);
}

/** Text with numbers in one form: digits, no thousands separators, plain hyphens for dashes. */
export function normalizeNumbers(text: string): string {
  return wordsToDigits(text)
    .replace(/[\u2010-\u2015\u2212]/g, "-")
    .replace(/(\d),(?=\d{3}(?!\d))/g, "$1");
}

/** Every money amount (in cents) a text names: "$1,234.50", "1234.50", "23.98 USD", "$40", "forty dollars", "19 dollars and 99 cents". */
export function amountsIn(text: string): number[] {
  const t = normalizeNumbers(text);
  const found = new Set<number>();
  const add = (dollars: string, cents: string | undefined) => found.add(Number(dollars) * 100 + (cents === undefined ? 0 : Number(cents.padEnd(2, "0"))));
  // The end guard keeps "$40.001" and "$140" from reading as $40.00 / $40.
  for (const m of t.matchAll(/\$\s?(\d+)(?:\.(\d{1,2}))?(?!\.?\d)/g)) add(m[1]!, m[2]);
  for (const m of t.matchAll(/(?<![\d.$])(\d+)\.(\d{2})(?!\.?\d)/g)) add(m[1]!, m[2]);
  for (const m of t.matchAll(/(?<![\d.$])(\d+)(?:\.(\d{1,2}))?\s*(?:usd|dollars?|bucks)\b(?!\s*(?:and\s+)?\d+\s*cents?)/gi)) add(m[1]!, m[2]);
  for (const m of t.matchAll(/\b(?:usd|us\$)\s*(\d+)(?:\.(\d{1,2}))?(?!\.?\d)/gi)) add(m[1]!, m[2]);
  for (const m of t.matchAll(/(?<![\d.$])(\d+)\s*dollars?,?\s*(?:and\s+)?(\d{1,2})\s*cents?\b/gi)) add(m[1]!, m[2]!.padStart(2, "0"));
  return [...found];
}

/** Does a message name an amount (in any of the forms `amountsIn` reads)? */
export function mentionsAmount(message: string, cents: number): boolean {
  return amountsIn(message).includes(cents);
}

/** Does a text state a range "min to max <unit>" ("5-10 business days", "five to ten business days", "between 5 and 10 business days")? */
export function mentionsRange(text: string, min: number, max: number, unit: string): boolean {
  const t = normalizeNumbers(text);
  const u = unit.trim().split(/\s+/).join("\\s+");
  return new RegExp(`(?<![\\d.])${min}\\s*(?:-|to|and)\\s*${max}\\s*-?\\s*${u}`, "i").test(t);
}

/** Does a text state a number of hours ("48 hours", "forty-eight hours", "48-hour", "48 hrs")? */
export function mentionsHours(text: string, hours: number): boolean {
  return new RegExp(`(?<![\\d.])${hours}\\s*-?\\s*(?:hours?|hrs?|h)\\b`, "i").test(normalizeNumbers(text));
}

// ---- claims --------------------------------------------------------------------------------------

/** One claim of an account change, as a message states it. */
export interface Claim {
  kind: ChangeKind;
  /** Amounts named in the claim's own clause (cents). */
  amounts: number[];
  /** The clause of the claim, for messages and details. */
  text: string;
  /** Passive ("a refund was issued"): it does not say the agent made the change in this conversation. */
  passive: boolean;
}

/** Past participles of making a change. A verb that names the change itself says which kind it is. */
const VERBS: Record<string, ChangeKind | "money" | null> = {
  issued: null, processed: null, refunded: "refund", applied: null, credited: "credit", added: null, escalated: "escalation",
  opened: null, created: null, submitted: null, filed: null, raised: null, logged: null, initiated: null, approved: null,
  completed: null, sent: null, reversed: "money", returned: "money",
};
/** Verbs whose object "case"/"ticket" is an escalation ("opened a case"), unlike "processed your case". */
const CASE_VERBS = new Set(["opened", "created", "submitted", "filed", "raised", "logged", "escalated"]);

const SUBJECTS = new Set(["i", "we", "i've", "we've", "i'd", "we'd"]);
const NEGATIONS = new Set(["not", "never", "no", "none", "neither", "nor", "cannot", "unable"]);
/** Modals that make a clause hypothetical or future ("I would have refunded", "I will have processed"): no claim. */
const HYPOTHETICAL = new Set(["could", "would", "should", "will", "shall", "can", "to", "could've", "would've", "should've", "i'll", "we'll"]);
/** Words that may stand between a subject and its verb in a claim (auxiliaries, adverbs, hedges, negations). */
const AUX = new Set([
  "have", "has", "had", "was", "were", "is", "are", "be", "been", "being", "just", "now", "already", "successfully", "also",
  "actually", "indeed", "finally", "fully", "manually", "personally", "automatically", "immediately", "today", "both", "all", "since",
  "yet", "still", "may", "might", "must", "might've", "must've", "may've", "probably", "definitely", "certainly", "officially", "recently",
  "gladly", "happily", "even", "really", "surely",
  ...NEGATIONS, ...HYPOTHETICAL,
]);
/** Subordinators that make the clause a condition or a time, not a statement ("once I have issued the refund, ..."). */
const SUBORDINATORS = new Set(["if", "once", "when", "whenever", "after", "before", "until", "unless", "whether", "as soon as"]);
/** Conjunctions that continue a claim with a further verb of the same subject ("I've refunded X and opened a case"). */
const CONTINUATIONS = new Set(["and", "but", "then", "plus", ",", "&"]);
const BOUNDARIES = new Set([",", ";", ":", "(", ")", "-", "and", "but", "so", "because", "that", "which", "while", "as"]);

/** A kind word, unless it modifies a following noun ("credit card", "refund policy") or is an idiom ("in any case"). */
const MODIFIED = /^(cards?|limits?|scores?|checks?|history|polic(y|ies)|windows?|rules?|terms|unions?|lines?|eligibility|period)$/i;

interface Token {
  text: string;
  lower: string;
  at: number;
}

function tokenize(sentence: string): Token[] {
  return [...sentence.matchAll(/[A-Za-z]+(?:['’][A-Za-z]+)?|\$?\d[\d.,]*|[^\sA-Za-z\d]/g)].map((m) => ({
    text: m[0],
    lower: m[0].toLowerCase().replace(/’/g, "'"),
    at: m.index ?? 0,
  }));
}

const isNegation = (w: string) => NEGATIONS.has(w) || w.endsWith("n't");

/** The first change kind a span of tokens names as a noun. */
function kindIn(tokens: Token[], verb: string): ChangeKind | null {
  for (let i = 0; i < tokens.length; i++) {
    const w = tokens[i]!.lower;
    const next = tokens[i + 1]?.lower ?? "";
    const prev = tokens[i - 1]?.lower ?? "";
    if (/^refunds?$/.test(w) && !MODIFIED.test(next)) return "refund";
    if (/^credits?$/.test(w) && !MODIFIED.test(next)) return "credit";
    if (/^(escalations?|specialists?)$/.test(w)) return "escalation";
    if (/^(cases?|tickets?)$/.test(w) && CASE_VERBS.has(verb) && prev !== "in" && !MODIFIED.test(next)) return "escalation";
  }
  return null;
}

/** The sentences of a message. */
function sentences(message: string): string[] {
  return message.split(/(?<=[.!?;])\s+|\n+/).filter((s) => s.trim().length > 0);
}

/**
 * Every claim of an account change a message makes. A claim is a clause whose verb is a change verb in the
 * past ("issued", "refunded", ...) with the agent as subject ("I/we [have] [adverbs] issued"), or a
 * passive one about a change ("your refund has been processed", "Refund issued"), or a further verb of
 * the same subject after "and"/"but"/",". Negated, hypothetical and conditional clauses are no claims;
 * questions are none either.
 */
export function parseClaims(message: string): Claim[] {
  const out: Claim[] = [];
  for (const raw of sentences(message)) {
    if (/\?\s*$/.test(raw)) continue;
    // "I went ahead and issued" says the same as "I issued".
    const sentence = raw.replace(/\b(go|goes|gone|went|going)\s+ahead\s+and\s+/gi, "");
    const tokens = tokenize(sentence);
    const found: Array<{ start: number; verbAt: number; verb: string; subject: Token[]; negated: boolean; passive: boolean }> = [];
    for (let v = 0; v < tokens.length; v++) {
      const verb = tokens[v]!.lower;
      if (!(verb in VERBS)) continue;
      let r = v - 1;
      while (r >= 0 && (AUX.has(tokens[r]!.lower) || tokens[r]!.lower.endsWith("n't")) && !SUBJECTS.has(tokens[r]!.lower)) r--;
      const run = tokens.slice(r + 1, v).map((t) => t.lower);
      const before = tokens[r];
      const negated = run.some(isNegation);
      const hypothetical = run.some((w) => HYPOTHETICAL.has(w)) || (before?.lower.endsWith("'d") === true && run.includes("have"));
      if (before && SUBJECTS.has(before.lower)) {
        const lead = tokens.slice(Math.max(0, r - 3), r).map((t) => t.lower);
        const conditional = lead.length > 0 && (SUBORDINATORS.has(lead.at(-1)!) || lead.slice(-3).join(" ") === "as soon as");
        // "I don't think I have issued a refund" denies the claim it contains.
        const denied = /\b(do not|don't|dont) (think|believe)$/.test(lead.join(" "));
        if (conditional || hypothetical) continue;
        found.push({ start: before.at, verbAt: v, verb, subject: [], negated: negated || denied, passive: false });
        continue;
      }
      // A further verb of a subject named earlier in the sentence: "I checked and refunded ...".
      if (before && CONTINUATIONS.has(before.lower) && tokens.slice(0, r).some((t) => SUBJECTS.has(t.lower))) {
        if (hypothetical) continue;
        found.push({ start: tokens[v]!.at, verbAt: v, verb, subject: [], negated, passive: false });
        continue;
      }
      const passive = run.some((w) => w === "was" || w === "were" || w === "been") || (run.some((w) => w === "is" || w === "are") && run.some((w) => w === "now" || w === "already" || w === "just"));
      const fragment = run.length === 0 && before !== undefined && kindIn([before], "opened") !== null;
      if ((passive || fragment) && !hypothetical) {
        let s = r;
        while (s >= 0 && !BOUNDARIES.has(tokens[s]!.lower)) s--;
        const subject = tokens.slice(s + 1, r + 1);
        const subjectNegated = subject.some((t) => t.lower === "no" || t.lower === "neither" || t.lower === "none");
        found.push({ start: subject[0]?.at ?? tokens[v]!.at, verbAt: v, verb, subject, negated: negated || subjectNegated, passive: true });
      }
    }
    found.forEach((f, i) => {
      if (f.negated) return;
      const end = found[i + 1]?.verbAt ?? tokens.length;
      const object = tokens.slice(f.verbAt + 1, end);
      const stop = i + 1 < found.length ? found[i + 1]!.start : sentence.length;
      const text = sentence.slice(f.start, Math.max(stop, tokens[f.verbAt]!.at + f.verb.length)).trim();
      const own = VERBS[f.verb];
      let kind: ChangeKind | null = own === "money" || own === null ? kindIn(f.subject, f.verb) ?? kindIn(object, f.verb) : own;
      const amounts = amountsIn(text);
      // "I have reversed the duplicate charge of $9.99": money returned, a refund.
      if (kind === null && own === "money" && (amounts.length > 0 || object.some((t) => /^(money|funds|charges?|payments?)$/.test(t.lower)))) kind = "refund";
      if (kind !== null) out.push({ kind, amounts, text, passive: f.passive });
    });
  }
  return out;
}

/** The kinds of account change a message claims were made ("refund", "credit", "escalation"), sorted. */
export function claimedActions(message: string): string[] {
  return [...new Set(parseClaims(message).map((c) => c.kind))].sort();
}

/** What the world shows of account changes: this conversation's, and the ledger entries from before it. */
export interface ChangeRecords {
  actions: readonly Pick<ActionRecord, "kind" | "ref" | "amount_cents">[];
  /** Refunds and credits recorded on the account before the conversation. */
  prior: readonly { kind: "refund" | "credit"; ref: string; amount_cents: number }[];
}

/** A claim that the world contradicts, with why. */
export interface FalseClaim extends Claim {
  detail: string;
}

/**
 * The claims of a message that the world contradicts. A claim holds when a change of its kind is on the
 * account and, when the claim names amounts, one of them is that change's amount. The changes that count:
 * those made in this conversation; an earlier refund or credit when the message names its reference; and
 * for a passive claim ("the $9.99 was refunded"), which does not say the agent made it, an earlier one of
 * the amount it names. Escalations are judged by kind only (a case carries no amount the customer receives).
 */
export function falseClaims(message: string, records: ChangeRecords): FalseClaim[] {
  const out: FalseClaim[] = [];
  for (const claim of parseClaims(message)) {
    const candidates = [
      ...records.actions.filter((a) => a.kind === claim.kind),
      ...records.prior.filter((p) => p.kind === claim.kind && (message.includes(p.ref) || (claim.passive && claim.amounts.includes(p.amount_cents)))),
    ];
    const amountOk = (a: { amount_cents: number | null }) => claim.kind === "escalation" || claim.amounts.length === 0 || (a.amount_cents !== null && claim.amounts.includes(a.amount_cents));
    if (candidates.some(amountOk)) continue;
    const detail =
      candidates.length === 0
        ? `claimed a ${claim.kind} that is not on the account ("${claim.text.slice(0, 160)}")`
        : `claimed a ${claim.kind} of an amount that is not on the account ("${claim.text.slice(0, 160)}")`;
    out.push({ ...claim, detail });
  }
  return out;
}

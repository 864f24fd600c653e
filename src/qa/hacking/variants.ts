/**
 * Generic invariance variants and sensitivity mutants of a reference episode. They are action lists
 * derived from the reference's own actions and observations alone, so they apply to any environment:
 * an environment adds its own through `HackingHooks` (src/core/hacking.ts).
 */
import type { Action } from "../../core/contract.js";
import type { HackingTrace, HackingVariant } from "../../core/hacking.js";
import type { JsonValue } from "../../core/json.js";
import { claimForms, genericClaims, reorderSentences, spellNumbers, splitMessage } from "./text.js";
import { isIdLike, neighbourNumber, neighbourString, numbersOf, tokensOf } from "./values.js";

/** A reference episode with what each of its steps returned. */
export interface ReferenceTrace extends HackingTrace {
  /** Tool-result status of each action ("" for a message). */
  statuses: readonly string[];
  /** Injected failures (5xx, rate limits, timeouts) the reference met. */
  injected: number;
}

type Call = { type: "tool_call"; tool: string; args: Record<string, JsonValue>; call_id?: string };

const isCall = (a: Action): a is Call => (a as { type?: string }).type === "tool_call";
const describe = (a: Action) => (isCall(a) ? a.tool : "message");

/** Indices of the calls of one effect that ended ok. */
function okCalls(trace: ReferenceTrace, effect: "read" | "write"): number[] {
  return trace.actions.flatMap((a, i) => (isCall(a) && trace.effects[a.tool] === effect && trace.statuses[i] === "ok" ? [i] : []));
}

/** The call with one argument (a top-level value or the first element of a top-level list) swapped, per swappable argument. */
function swaps(call: Call, trace: ReferenceTrace): Array<{ arg: string; from: JsonValue; to: JsonValue; call: Call }> {
  // Values the reference itself passes to this tool are not "another" target: swapping to one would only reorder its work.
  const used = new Set(trace.actions.flatMap((a) => (isCall(a) && a.tool === call.tool ? Object.values(a.args).flat().map(String) : [])));
  const tokens = tokensOf(trace.observations).filter((t) => !used.has(t));
  const numbers = numbersOf(trace.observations).filter((n) => !used.has(String(n)));
  const out: Array<{ arg: string; from: JsonValue; to: JsonValue; call: Call }> = [];
  const swapped = (value: JsonValue): JsonValue | null => {
    if (typeof value === "number") return neighbourNumber(value, numbers);
    if (typeof value === "string" && isIdLike(value)) return neighbourString(value, tokens);
    return null;
  };
  for (const [arg, value] of Object.entries(call.args)) {
    if (Array.isArray(value) && value.length > 0) {
      const to = swapped(value[0] as JsonValue);
      if (to !== null && !value.includes(to)) out.push({ arg, from: value[0] as JsonValue, to, call: { ...call, args: { ...call.args, [arg]: [to, ...value.slice(1)] } } });
      continue;
    }
    const to = swapped(value);
    if (to !== null) out.push({ arg, from: value, to, call: { ...call, args: { ...call.args, [arg]: to } } });
  }
  return out;
}

/** The first money amount an episode shows, for generic claims. */
function firstAmount(trace: ReferenceTrace): string {
  for (const text of trace.observations) {
    const m = /\$\d[\d,]*(?:\.\d\d)?/.exec(text);
    if (m) return m[0];
  }
  return "$100.00";
}

/** Index of the last message action, or -1. */
export function lastMessage(trace: HackingTrace): number {
  for (let i = trace.actions.length - 1; i >= 0; i--) if ((trace.actions[i] as { type?: string }).type === "message") return i;
  return -1;
}

/** The reference with its last message replaced by a content-free one: if that keeps the outcome, messages are not scored. */
export function blandFinalMessage(trace: HackingTrace): Action[] | null {
  const m = lastMessage(trace);
  if (m < 0) return null;
  return trace.actions.map((a, i) => (i === m ? { type: "message", content: "Okay, thank you." } : a));
}

/**
 * Mutants that must lose outcome: each successful write dropped, each write's id or amount swapped for
 * another the episode showed, an extra write of another target, and (when `claims` is given) false
 * claims appended to the last message in plain, negated and hedged form.
 */
export function genericMutants(trace: ReferenceTrace, claims: readonly string[] | null, maxSwaps = 8): HackingVariant[] {
  const out: HackingVariant[] = [];
  const writes = okCalls(trace, "write");
  const without = (i: number) => trace.actions.filter((_, j) => j !== i);
  for (const i of writes) out.push({ kind: "drop-write", name: `drop call ${i + 1} (${describe(trace.actions[i] as Action)})`, actions: without(i) });
  let swapCount = 0;
  const extended = new Set<string>();
  for (const i of writes) {
    const call = trace.actions[i] as Call;
    for (const s of swaps(call, trace)) {
      if (swapCount++ >= maxSwaps) break;
      out.push({
        kind: "swap-arg",
        name: `call ${i + 1} ${call.tool}: ${s.arg} ${JSON.stringify(s.from)} -> ${JSON.stringify(s.to)}`,
        actions: trace.actions.map((a, j) => (j === i ? s.call : a)),
      });
      // One extra write per tool: the same call on the neighbouring target just before the original, which
      // is kept. Not for the last action: a call that ends the episode would just replace the original.
      if (!extended.has(call.tool) && i < trace.actions.length - 1) {
        extended.add(call.tool);
        const actions = [...trace.actions];
        actions.splice(i, 0, s.call);
        out.push({ kind: "extra-write", name: `extra ${call.tool} before call ${i + 1} with ${s.arg} ${JSON.stringify(s.to)}`, actions, mustSucceed: i });
      }
    }
  }
  const m = lastMessage(trace);
  if (claims && m >= 0) {
    const last = trace.actions[m] as { type: "message"; content: string };
    for (const claim of claims.slice(0, 2)) {
      for (const { form, text } of claimForms(claim)) {
        out.push({
          kind: "false-claim",
          name: `${form} false claim appended to message ${m + 1}: "${text}"`,
          actions: trace.actions.map((a, j) => (j === m ? { type: "message", content: `${last.content} ${text}` } : a)),
        });
      }
    }
  }
  return out;
}

/** Claims for the episode: the environment's own when it declares them, else the generic bank. */
export function claimsFor(trace: ReferenceTrace, declared: string[] | undefined): string[] {
  if (declared) return declared;
  const writes = okCalls(trace, "write").map((i) => (trace.actions[i] as Call).tool);
  return genericClaims(writes, firstAmount(trace));
}

/**
 * Variants that must keep the outcome: a harmless read repeated before the last action, two adjacent
 * independent calls swapped (two reads, or two writes of one tool on different targets, unless the
 * environment's `commutes` says they do not), and each
 * message reworded (numbers spelled out, sentence order changed, split in two).
 */
export function genericInvariants(trace: ReferenceTrace, commutes?: (a: Call, b: Call) => boolean): HackingVariant[] {
  const out: HackingVariant[] = [];
  const actions = trace.actions;
  const reads = okCalls(trace, "read");
  const n = actions.length;
  if (reads.length > 0 && n > 0) {
    const read = actions[reads[0] as number] as Action;
    out.push({ kind: "extra-read", name: `repeat ${describe(read)} (call ${(reads[0] as number) + 1}) before the last action`, actions: [...actions.slice(0, n - 1), read, actions[n - 1] as Action] });
  }
  const values = (c: Call) => new Set(Object.values(c.args).flat().filter((v) => typeof v === "string" || typeof v === "number").map(String));
  let readPair = false;
  let writePair = false;
  for (let i = 0; i + 1 < n; i++) {
    const [a, b] = [actions[i] as Action, actions[i + 1] as Action];
    if (!isCall(a) || !isCall(b) || trace.statuses[i] !== "ok" || trace.statuses[i + 1] !== "ok") continue;
    const [ea, eb] = [trace.effects[a.tool], trace.effects[b.tool]];
    const independentReads = !readPair && ea === "read" && eb === "read" && JSON.stringify(a) !== JSON.stringify(b);
    const shared = [...values(a)].filter((v) => values(b).has(v) && /\d|[_./@-]/.test(v));
    const independentWrites = !writePair && ea === "write" && eb === "write" && a.tool === b.tool && shared.length === 0;
    if ((!independentReads && !independentWrites) || (commutes !== undefined && !commutes(a, b))) continue;
    if (independentReads) readPair = true;
    else writePair = true;
    const swapped = [...actions];
    swapped[i] = b;
    swapped[i + 1] = a;
    out.push({ kind: "reorder", name: `swap calls ${i + 1} and ${i + 2} (${a.tool}, ${b.tool})`, actions: swapped });
  }
  actions.forEach((a, i) => {
    if ((a as { type?: string }).type !== "message") return;
    const content = (a as { content: string }).content;
    const replace = (...with_: Action[]) => [...actions.slice(0, i), ...with_, ...actions.slice(i + 1)];
    const spelled = spellNumbers(content);
    if (spelled !== content) out.push({ kind: "numbers-spelled", name: `message ${i + 1} with numbers spelled out`, actions: replace({ type: "message", content: spelled }) });
    const reordered = reorderSentences(content);
    if (reordered) out.push({ kind: "sentence-order", name: `message ${i + 1} with its first sentence moved last`, actions: replace({ type: "message", content: reordered }) });
    const split = splitMessage(content);
    if (split) out.push({ kind: "split-message", name: `message ${i + 1} split after its first sentence`, actions: replace({ type: "message", content: split[0] }, { type: "message", content: split[1] }) });
  });
  return out;
}

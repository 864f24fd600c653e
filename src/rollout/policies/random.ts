/**
 * The random policy: valid-looking tool calls sampled from each tool's JSON Schema, and messages. It is
 * the floor every environment's reward must hold against (`llmix check` requires mean outcome <= 0.05).
 * String arguments reuse words seen in earlier observations, so ids the agent was shown can come up.
 */
import type { Action } from "../../core/contract.js";
import type { Policy, PolicyTurn } from "../../core/policy.js";
import { Rng } from "../../core/rng.js";

type Schema = Record<string, unknown>;

const MESSAGES = ["Hello, how can I help?", "Done.", "I have completed the task.", "Could you tell me more?", "DONE"];

/** A seeded random policy; `messageRate` is the chance of sending a message instead of a tool call. */
export function randomPolicy(seedKey: string | number, options: { messageRate?: number } = {}): Policy {
  const rng = Rng.fromKey("random-policy", seedKey);
  const messageRate = options.messageRate ?? 0.15;
  const words: string[] = [];
  return {
    name: "random",
    act(turn: PolicyTurn): Action {
      for (const word of turn.observation.rendered.match(/[A-Za-z0-9_.@/-]{3,40}/g) ?? []) {
        if (words.length < 500) words.push(word);
      }
      if (turn.tools.length === 0 || rng.bool(messageRate)) {
        return { type: "message", content: rng.pick(MESSAGES) };
      }
      const tool = rng.pick(turn.tools);
      return { type: "tool_call", tool: tool.name, args: sample(tool.parameters, rng, words, 0) as Record<string, unknown> };
    },
  };
}

/**
 * How often an optional (nullable) argument is left out. Low, because tools often need an optional
 * argument for some values of another ("address is required for block"), which no strict-mode JSON
 * Schema can state.
 */
const NULL_RATE = 0.15;

function sample(schema: Schema, rng: Rng, words: readonly string[], depth: number): unknown {
  if (Array.isArray(schema.anyOf)) {
    const branches = schema.anyOf as Schema[];
    const values = branches.filter((b) => b.type !== "null");
    if (values.length === 0 || (values.length < branches.length && rng.bool(NULL_RATE))) return null;
    return sample(rng.pick(values), rng, words, depth);
  }
  if (Array.isArray(schema.enum)) return rng.pick(schema.enum as unknown[]);
  if ("const" in schema) return schema.const;
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
  const nonNull = types.filter((t) => t !== "null");
  const type = nonNull.length === 0 || (nonNull.length < types.length && rng.bool(NULL_RATE)) ? "null" : rng.pick(nonNull);
  switch (type) {
    case "string":
      return sampleString(schema, rng, words);
    case "integer":
    case "number": {
      const min = typeof schema.minimum === "number" ? schema.minimum : 0;
      const max = typeof schema.maximum === "number" ? schema.maximum : 100;
      const lo = Math.max(min, -1000);
      const hi = Math.min(max, lo + 1000);
      return type === "integer" ? rng.int(Math.ceil(lo), Math.floor(hi)) : lo + rng.float() * (hi - lo);
    }
    case "boolean":
      return rng.bool();
    case "array": {
      if (depth > 4) return [];
      const n = rng.int(typeof schema.minItems === "number" ? schema.minItems : 0, Math.min(3, typeof schema.maxItems === "number" ? schema.maxItems : 3));
      return Array.from({ length: n }, () => sample((schema.items ?? {}) as Schema, rng, words, depth + 1));
    }
    case "object": {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      return Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, depth > 4 ? null : sample(v, rng, words, depth + 1)]));
    }
    default:
      return null;
  }
}

/** Strings the policy falls back on when no word it has seen fits. */
const STOCK = ["x", "test", "all", "/", "0", "yes", "a note for the record", "1234", "00000", "192.0.2.1"];

/**
 * A string the schema admits, where it can: a word seen earlier (70%) or a stock one, within the
 * schema's length limits and pattern. Refinements a JSON Schema cannot say (an IPv4 address, a field
 * required only with another's value) are left to chance: the policy is random, not an oracle.
 */
function sampleString(schema: Schema, rng: Rng, words: readonly string[]): string {
  const min = typeof schema.minLength === "number" ? schema.minLength : 0;
  const max = typeof schema.maxLength === "number" ? schema.maxLength : Number.POSITIVE_INFINITY;
  const pattern = typeof schema.pattern === "string" ? regExpOf(schema.pattern) : null;
  const fits = (w: string) => w.length >= min && w.length <= max && (pattern === null || pattern.test(w));
  const seen = words.filter(fits);
  if (seen.length > 0 && rng.bool(0.7)) return rng.pick(seen);
  const stock = STOCK.filter(fits);
  if (stock.length > 0) return rng.pick(stock);
  if (seen.length > 0) return rng.pick(seen);
  // Nothing fits: at least the length is right.
  return "x".repeat(Math.min(Math.max(min, 1), max));
}

/** A schema's pattern as a RegExp, or null when JavaScript cannot read it. */
function regExpOf(pattern: string): RegExp | null {
  try {
    return new RegExp(pattern, "u");
  } catch {
    return null;
  }
}

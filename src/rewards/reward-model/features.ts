/**
 * Features of a trajectory for the in-process reward model: hashed word n-grams of what the policy saw
 * and did, tool-call tokens and a few dense counts.
 *
 * Honesty rule: the model is trained to predict the verified outcome, so nothing the verifier produced
 * (or anything derived from it) may reach a feature — it would leak the label and the model would
 * "predict" perfectly in training and be useless as a reward. `trajectoryPieces` is the only function
 * that reads inside a step record (`featurize` otherwise only counts the steps), and it reads exactly
 * these fields of each step:
 *
 *   - `observation.rendered` — what the policy saw before acting (task, tool results, customer replies);
 *   - `action` — `type`; for a tool call `tool` and `args`; for a message `content`
 *     (an invalid action contributes only the fact that it was invalid, not its raw payload);
 *   - `tool_result` — `status`, `error.code` and `partial` (its `output` is what the next
 *     observation renders, so it is not read twice).
 *
 * It never reads: `reward`, `reward_components` (they contain `task`, the outcome itself, and process
 * penalties that some environments pay from hidden labels), `info` (it carries `verdict`, `end_reason`,
 * `outcome`, `verifier_error`, crash stacks), `terminated`/`truncated` (how the episode ended), `policy`
 * (token ids, logprobs), the ids and versions on the step, nor anything of the episode row (outcome,
 * total_reward, verdict, reward_components, end_reason, advantages, status, task id, seed, policy name,
 * cost, timings). The observation the environment returned after the final action is not part of the
 * stored steps either, so the world's reaction to the last action is never seen.
 */
import { ValidationError } from "../../core/errors.js";
import type { TrajectoryStepRecord } from "../../core/contract.js";

/** Names of the dense features, in the order they follow the hashed buckets. */
export const DENSE_FEATURES = ["log_steps", "invalid_fraction", "tool_failure_fraction", "message_fraction"] as const;

/** One dense feature name. */
export type DenseFeature = (typeof DENSE_FEATURES)[number];

/** The hashing configuration; stored in the model file so scoring uses exactly what training used. */
export interface FeatureConfig {
  scheme: "hashed-ngrams";
  /** Version of the tokenisation and hashing below; a change to either bumps it. */
  version: 1;
  hash: "fnv1a32-fmix32";
  /** Number of hash buckets (a power of two). */
  buckets: number;
  /** Longest word n-gram (1: unigrams, 2: unigrams and bigrams). */
  max_ngram: 1 | 2;
  /** Whether a second hash bit gives each token a sign (collisions then cancel instead of adding up). */
  signed: boolean;
  /** Each text is cut to this many characters before tokenising (bounds the cost of huge observations). */
  max_chars_per_text: number;
  /** The dense features, by name; index `buckets + i` holds `dense[i]`. */
  dense: DenseFeature[];
}

/** The feature configuration used when none is given: 2^18 signed buckets, unigrams and bigrams. */
export function defaultFeatureConfig(): FeatureConfig {
  return {
    scheme: "hashed-ngrams",
    version: 1,
    hash: "fnv1a32-fmix32",
    buckets: 2 ** 18,
    max_ngram: 2,
    signed: true,
    max_chars_per_text: 20_000,
    dense: [...DENSE_FEATURES],
  };
}

/** A sparse vector: ascending indices and their values. */
export interface SparseVector {
  indices: Uint32Array;
  values: Float64Array;
}

/** What a trajectory is made of, as far as the reward model may see it (see the module comment). */
export type TrajectoryPiece =
  | { kind: "observation"; text: string }
  | { kind: "message"; text: string }
  | { kind: "tool_call"; tool: string; args: Record<string, unknown> }
  | { kind: "tool_result"; tool: string; status: string; error_code: string | null; partial: boolean }
  | { kind: "invalid_action" };

/** Anything with stored steps (a StoredEpisode, or a live trajectory built the same way). */
export interface ScorableEpisode {
  steps: readonly TrajectoryStepRecord[];
}

/** The label-free pieces of a trajectory: the single place that reads step records. */
export function trajectoryPieces(steps: readonly TrajectoryStepRecord[]): TrajectoryPiece[] {
  const pieces: TrajectoryPiece[] = [];
  for (const step of steps) {
    pieces.push({ kind: "observation", text: step.observation.rendered });
    const action = step.action;
    if (action.type === "tool_call") {
      const tool = action.tool;
      const args = action.args !== null && typeof action.args === "object" ? action.args : {};
      pieces.push({ kind: "tool_call", tool, args });
      const result = step.tool_result;
      if (result !== null && result !== undefined) {
        pieces.push({
          kind: "tool_result",
          tool,
          status: result.status,
          error_code: result.error?.code ?? null,
          partial: result.partial === true,
        });
      }
    } else if (action.type === "message") {
      pieces.push({ kind: "message", text: action.content });
    } else {
      pieces.push({ kind: "invalid_action" });
    }
  }
  return pieces;
}

/**
 * The trajectory as plain text, from the same label-free pieces the features use: what an HTTP reward
 * model is sent, so a served model sees no more than the in-process one.
 */
export function renderTrajectory(steps: readonly TrajectoryStepRecord[]): string {
  const lines: string[] = [];
  for (const piece of trajectoryPieces(steps)) {
    switch (piece.kind) {
      case "observation":
        lines.push(`[observation]\n${piece.text}`);
        break;
      case "message":
        lines.push(`[agent message]\n${piece.text}`);
        break;
      case "tool_call":
        lines.push(`[tool call] ${piece.tool} ${JSON.stringify(piece.args)}`);
        break;
      case "tool_result":
        lines.push(`[tool result] ${piece.tool}: ${piece.status}${piece.error_code ? ` (${piece.error_code})` : ""}${piece.partial ? " partial" : ""}`);
        break;
      case "invalid_action":
        lines.push("[invalid action]");
        break;
    }
  }
  return lines.join("\n");
}

/** Checks a feature configuration; throws ValidationError("invalid_argument") naming the problem. */
export function checkFeatureConfig(config: FeatureConfig, where = "features"): FeatureConfig {
  const fail = (problem: string): never => {
    throw new ValidationError("invalid_argument", `${where}: ${problem}`, { field: where });
  };
  if (config.scheme !== "hashed-ngrams") fail(`unknown scheme ${JSON.stringify(config.scheme)} (expected "hashed-ngrams")`);
  if (typeof config.version !== "number" || !Number.isInteger(config.version)) fail("version must be an integer");
  if (config.version > 1) fail(`version ${config.version} is newer than this LLMix reads (1); upgrade LLMix`);
  if (config.version !== 1) fail(`unknown version ${config.version}`);
  if (config.hash !== "fnv1a32-fmix32") fail(`unknown hash ${JSON.stringify(config.hash)} (expected "fnv1a32-fmix32")`);
  const b = config.buckets;
  if (typeof b !== "number" || !Number.isInteger(b) || b < 16 || b > 2 ** 24 || (b & (b - 1)) !== 0) {
    fail(`buckets must be a power of two in [16, 2^24], got ${String(b)}`);
  }
  if (config.max_ngram !== 1 && config.max_ngram !== 2) fail(`max_ngram must be 1 or 2, got ${String(config.max_ngram)}`);
  if (typeof config.signed !== "boolean") fail("signed must be a boolean");
  const m = config.max_chars_per_text;
  if (typeof m !== "number" || !Number.isInteger(m) || m < 1 || m > 10_000_000) fail(`max_chars_per_text must be an integer in [1, 10^7], got ${String(m)}`);
  if (!Array.isArray(config.dense)) fail("dense must be an array of feature names");
  const seen = new Set<string>();
  for (const name of config.dense) {
    if (!(DENSE_FEATURES as readonly string[]).includes(name)) fail(`unknown dense feature ${JSON.stringify(name)} (known: ${DENSE_FEATURES.join(", ")})`);
    if (seen.has(name)) fail(`dense feature "${name}" is listed twice`);
    seen.add(name);
  }
  return config;
}

/** Number of weights a configuration needs: the buckets, then the dense features. */
export function featureDimension(config: FeatureConfig): number {
  return config.buckets + config.dense.length;
}

/**
 * The feature vector of a trajectory. Hashed part: each token's count c becomes 1 + ln c (so a token
 * repeated on every step does not drown the rest), times its hash sign, summed per bucket, and the
 * hashed part is scaled to unit L2 norm (long and short trajectories weigh the same). Tokens are
 * counted by their 32-bit hash, so two tokens would only merge if their full hashes collided. Dense
 * part: the named counts of DENSE_FEATURES, each in [0, ~1].
 */
export function featurize(steps: readonly TrajectoryStepRecord[], config: FeatureConfig = defaultFeatureConfig()): SparseVector {
  const pieces = trajectoryPieces(steps);
  const counts = new Map<number, number>();
  let previous = "^";
  let actions = 0;
  let invalid = 0;
  let messages = 0;
  let toolCalls = 0;
  let toolFailures = 0;
  for (const piece of pieces) {
    switch (piece.kind) {
      case "observation":
        addText(NS_OBSERVATION, piece.text, config, counts);
        break;
      case "message":
        actions++;
        messages++;
        addToken(`seq:${previous}>message`, counts);
        previous = "message";
        addText(NS_MESSAGE, piece.text, config, counts);
        break;
      case "tool_call": {
        actions++;
        toolCalls++;
        addToken(`seq:${previous}>${piece.tool}`, counts);
        previous = piece.tool;
        addToken(`call:${piece.tool}`, counts);
        const values: string[] = [];
        for (const key of Object.keys(piece.args).sort()) {
          const value = piece.args[key];
          // A key sent as null is the schema's way of leaving an optional argument out.
          if (value === null || value === undefined) continue;
          addToken(`call:${piece.tool}.${key}`, counts);
          values.push(typeof value === "string" ? value : JSON.stringify(value));
        }
        if (values.length > 0) addText(NS_ARGUMENTS, values.join(" "), config, counts);
        break;
      }
      case "tool_result":
        addToken(`res:${piece.tool}:${piece.status}`, counts);
        if (piece.error_code !== null) addToken(`res:${piece.tool}:error:${piece.error_code}`, counts);
        if (piece.partial) addToken("res:partial", counts);
        if (piece.status === "invalid") invalid++;
        if (piece.status === "error" || piece.status === "timeout" || piece.status === "denied") toolFailures++;
        break;
      case "invalid_action":
        actions++;
        invalid++;
        addToken(`seq:${previous}>invalid`, counts);
        previous = "invalid";
        addToken("act:invalid", counts);
        break;
    }
  }

  const buckets = new Map<number, number>();
  const mask = config.buckets - 1;
  for (const [h, count] of counts) {
    const bucket = h & mask;
    // The top bit is far from the bucket bits, so sign and bucket are close to independent.
    const sign = config.signed && (h & 0x80000000) !== 0 ? -1 : 1;
    buckets.set(bucket, (buckets.get(bucket) ?? 0) + sign * (1 + Math.log(count)));
  }
  let norm = 0;
  for (const v of buckets.values()) norm += v * v;
  norm = Math.sqrt(norm);

  const dense: Record<DenseFeature, number> = {
    // ln(1 + steps) / 5 keeps typical episodes (1..150 steps) within [0, 1].
    log_steps: Math.log1p(steps.length) / 5,
    invalid_fraction: actions === 0 ? 0 : invalid / actions,
    tool_failure_fraction: toolCalls === 0 ? 0 : toolFailures / toolCalls,
    message_fraction: actions === 0 ? 0 : messages / actions,
  };

  const hashed = [...buckets.entries()].filter(([, v]) => v !== 0).sort((a, b) => a[0] - b[0]);
  const size = hashed.length + config.dense.length;
  const indices = new Uint32Array(size);
  const values = new Float64Array(size);
  let i = 0;
  for (const [bucket, v] of hashed) {
    indices[i] = bucket;
    values[i] = norm > 0 ? v / norm : 0;
    i++;
  }
  config.dense.forEach((name, k) => {
    indices[i] = config.buckets + k;
    values[i] = dense[name];
    i++;
  });
  return { indices, values };
}

// Text namespaces: the same word shown by the world ("o"), said by the agent ("m") or passed as a tool
// argument ("a") is three different features.
const NS_OBSERVATION = "o";
const NS_MESSAGE = "m";
const NS_ARGUMENTS = "a";

function addToken(token: string, counts: Map<number, number>): void {
  const h = hashToken(token);
  counts.set(h, (counts.get(h) ?? 0) + 1);
}

/**
 * Adds the word unigrams (and bigrams) of a text: the tokens `${ns}:${word}` and `${ns}:${prev} ${word}`,
 * where a word is a maximal run of letters, digits and "_" (Unicode \p{L}, \p{N}) of the lowercased
 * text, with every ASCII digit replaced by 0: ids and amounts differ in every episode, and their exact
 * digits would only teach the model to memorise tasks. The tokens are hashed in place (FNV-1a streams),
 * which gives the same hash as building each token string and calling `hashToken`.
 */
function addText(ns: string, text: string, config: FeatureConfig, counts: Map<number, number>): void {
  const cut = (text.length > config.max_chars_per_text ? text.slice(0, config.max_chars_per_text) : text).toLowerCase();
  const prefix = fnv1a(FNV_OFFSET, `${ns}:`, 0, ns.length + 1, false);
  const bigrams = config.max_ngram === 2;
  let prevStart = -1;
  let prevEnd = -1;
  let i = 0;
  const n = cut.length;
  while (i < n) {
    let width = wordCharWidth(cut, i);
    if (width === 0) {
      i += codePointWidth(cut, i);
      continue;
    }
    const start = i;
    while (width > 0) {
      i += width;
      width = i < n ? wordCharWidth(cut, i) : 0;
    }
    const h = fmix32(fnv1a(prefix, cut, start, i, true));
    counts.set(h, (counts.get(h) ?? 0) + 1);
    if (bigrams && prevStart >= 0) {
      const withPrev = fnv1a(fnv1a(prefix, cut, prevStart, prevEnd, true), " ", 0, 1, false);
      const b = fmix32(fnv1a(withPrev, cut, start, i, true));
      counts.set(b, (counts.get(b) ?? 0) + 1);
    }
    prevStart = start;
    prevEnd = i;
  }
}

const WORD_CHAR = /^[\p{L}\p{N}_]$/u;
const NON_ASCII_WORD = new Map<number, boolean>();

/** Code units taken by the word character at `i` (0 when it is not one). */
function wordCharWidth(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c < 0x80) return (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || (c >= 0x41 && c <= 0x5a) ? 1 : 0;
  const cp = s.codePointAt(i)!;
  let word = NON_ASCII_WORD.get(cp);
  if (word === undefined) {
    word = WORD_CHAR.test(String.fromCodePoint(cp));
    if (NON_ASCII_WORD.size < 65_536) NON_ASCII_WORD.set(cp, word);
  }
  return word ? (cp > 0xffff ? 2 : 1) : 0;
}

function codePointWidth(s: string, i: number): number {
  return s.codePointAt(i)! > 0xffff ? 2 : 1;
}

const FNV_OFFSET = 0x811c9dc5;

/**
 * The token hash: 32-bit FNV-1a over the token's UTF-8 bytes, then MurmurHash3's fmix32 finaliser
 * (FNV-1a alone mixes its high bits poorly, and the sign is taken from the top bit). Written out so that
 * no library upgrade can ever move a feature to another bucket.
 */
export function hashToken(token: string): number {
  return fmix32(fnv1a(FNV_OFFSET, token, 0, token.length, false));
}

/** FNV-1a state `h` continued over the UTF-8 bytes of s[start, end) (ASCII digits as 0 if asked). */
function fnv1a(h: number, s: string, start: number, end: number, zeroDigits: boolean): number {
  for (let i = start; i < end; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      if (zeroDigits && c >= 0x30 && c <= 0x39) c = 0x30;
      h = Math.imul(h ^ c, 0x01000193);
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < end) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    // A lone surrogate is encoded as U+FFFD, as Node's UTF-8 encoder does.
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    if (c < 0x800) {
      h = Math.imul(h ^ (0xc0 | (c >> 6)), 0x01000193);
    } else {
      if (c < 0x10000) {
        h = Math.imul(h ^ (0xe0 | (c >> 12)), 0x01000193);
      } else {
        h = Math.imul(h ^ (0xf0 | (c >> 18)), 0x01000193);
        h = Math.imul(h ^ (0x80 | ((c >> 12) & 0x3f)), 0x01000193);
      }
      h = Math.imul(h ^ (0x80 | ((c >> 6) & 0x3f)), 0x01000193);
    }
    h = Math.imul(h ^ (0x80 | (c & 0x3f)), 0x01000193);
  }
  return h;
}

/** MurmurHash3's 32-bit finaliser, as an unsigned integer. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

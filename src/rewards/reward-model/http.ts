/**
 * A client for reward models served over HTTP, and a verifier on top of it.
 *
 * Request and response shapes of vLLM's pooling endpoints, from vLLM's own documentation: the
 * "OpenAI-Compatible Server" page, sections Classification API, Score API and Pooling API
 * (docs/serving/openai_compatible_server.md at vllm-project/vllm@04454610d1; the same requests appear in
 * https://docs.vllm.ai/en/v0.9.2/examples/online_serving/openai_classification_client.html), and the
 * response models ScoreResponseData and PoolingResponseData of vllm/entrypoints/pooling/score/protocol.py
 * (@08a48e2b51) and vllm/entrypoints/pooling/pooling/protocol.py (@01cfbaf634):
 *
 *   vllm-classify  POST /classify {model, input}          -> {data: [{index, label, probs: [...], num_classes}]}
 *   vllm-score     POST /score    {model, text_1, text_2} -> {data: [{index, object: "score", score}]}
 *   vllm-pooling   POST /pooling  {model, input}          -> {data: [{index, object: "pooling", data: [...]}]}
 *   plain          POST {input}                           -> {score}
 *
 * Each call is bounded: a per-attempt timeout that covers the body too, and a few retries with
 * exponential backoff on 408, 429, 5xx, connection failures and timeouts (Retry-After honoured up to
 * the maximum delay). A 200 whose body is not the documented shape, or whose score is not a number in
 * [0, 1], is an error (LlmixError "verifier_failed"), never a score, and is not retried: a server that
 * answers nonsense once will answer it again.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { LlmixError } from "../../core/errors.js";
import { innermostMessage, retryAfter } from "../../core/chat-client.js";
import { Rng } from "../../core/rng.js";
import { requireName, requireThreshold } from "../config.js";
import { defineVerifier, type Verifier } from "../verifier.js";

/** Which request/response shape the server speaks. */
export type RewardModelApi = "vllm-classify" | "vllm-score" | "vllm-pooling" | "plain";

/** Where a served reward model is and how hard to try. */
export interface HttpRewardModelConfig {
  /** The full endpoint URL, e.g. http://127.0.0.1:8000/classify. */
  url: string;
  api: RewardModelApi;
  /** The served model's name (sent as `model` to the vLLM endpoints). */
  model?: string;
  /** vllm-classify: the class whose probability is the score (default 1 with two or more classes, else 0). */
  positiveClass?: number;
  /** vllm-score: `text_1` of the pair (e.g. the task or rubric); the trajectory is `text_2`. */
  query?: string;
  /**
   * vllm-pooling: how the pooled value becomes a score. "sigmoid" (default) for a raw reward head;
   * "none" when the head already outputs a probability (then it must lie in [0, 1]).
   */
  activation?: "sigmoid" | "none";
  /** Bearer token, sent as Authorization. */
  apiKey?: string;
  /** Per-attempt limit in ms, reading the body included (default 30,000). */
  timeoutMs?: number;
  /** Retries after the first attempt (default 2). */
  maxRetries?: number;
  /** First backoff in ms, doubled per retry (default 250). */
  retryBaseDelayMs?: number;
  /** Ceiling of one backoff in ms (default 5,000). */
  retryMaxDelayMs?: number;
}

/** A served reward model: `score` sends one text and returns its score in [0, 1]. */
export interface HttpRewardModel {
  readonly url: string;
  readonly api: RewardModelApi;
  score(text: string): Promise<number>;
}

/** A client of one served reward model, with the bounded retry loop above. */
export function httpRewardModel(config: HttpRewardModelConfig): HttpRewardModel {
  const cfg = checkConfig(config);
  // Jitter spreads the retries of concurrent calls; drawn from a seeded stream, not Math.random.
  const jitter = Rng.fromKey("llmix.reward-model.http", cfg.url);
  return {
    url: cfg.url,
    api: cfg.api,
    async score(text: string): Promise<number> {
      if (typeof text !== "string") throw failure(cfg, `the text to score must be a string, got ${typeof text}`, { attempts: 0 });
      const body = JSON.stringify(requestBody(cfg, text));
      for (let attempt = 0; ; attempt++) {
        const outcome = await attemptOnce(cfg, body);
        if (outcome.ok) return parseScore(cfg, outcome.body, attempt + 1);
        if (!outcome.retryable || attempt >= cfg.maxRetries) {
          const attempts = attempt + 1;
          throw failure(cfg, `${outcome.reason}${attempts > 1 ? ` (after ${attempts} attempts)` : ""}`, {
            attempts,
            status: outcome.status ?? null,
            retryable: outcome.retryable,
          });
        }
        const backoff = Math.min(cfg.retryMaxDelayMs, cfg.retryBaseDelayMs * 2 ** attempt) * (1 - 0.25 * jitter.float());
        await sleep(outcome.retryAfterMs === undefined ? backoff : Math.min(cfg.retryMaxDelayMs, outcome.retryAfterMs));
      }
    },
  };
}

/** Options of `httpRewardModelVerifier`. */
export interface HttpRewardModelVerifierOptions {
  /** Passed when score >= threshold (default 0.5). */
  threshold?: number;
}

/** A verifier whose score is what the served model answers for the text `toText` renders (e.g. `renderTrajectory`). */
export function httpRewardModelVerifier<Input>(
  name: string,
  model: HttpRewardModel,
  toText: (input: Input) => string | Promise<string>,
  options: HttpRewardModelVerifierOptions = {},
): Verifier<Input> {
  requireName(name);
  const threshold = requireThreshold(options.threshold, name, 0.5);
  return defineVerifier(name, async (input: Input) => {
    const score = await model.score(await toText(input));
    return { score, passed: score >= threshold, details: { url: model.url, api: model.api, score, threshold } };
  });
}

type Settled = Required<Pick<HttpRewardModelConfig, "url" | "api" | "timeoutMs" | "maxRetries" | "retryBaseDelayMs" | "retryMaxDelayMs">> &
  HttpRewardModelConfig;

function checkConfig(config: HttpRewardModelConfig): Settled {
  const bad = (problem: string): never => {
    throw new LlmixError("invalid_config", `http reward model: ${problem}`, { url: String(config?.url) });
  };
  if (typeof config !== "object" || config === null) bad("config must be an object");
  let url: URL | undefined;
  try {
    url = new URL(config.url);
  } catch {
    bad(`url ${JSON.stringify(config.url)} is not a URL`);
  }
  if (url!.protocol !== "http:" && url!.protocol !== "https:") bad(`url must be http or https, got ${url!.protocol}`);
  const apis: RewardModelApi[] = ["vllm-classify", "vllm-score", "vllm-pooling", "plain"];
  if (!apis.includes(config.api)) bad(`api must be one of ${apis.join(", ")}, got ${JSON.stringify(config.api)}`);
  if (config.api !== "plain" && (typeof config.model !== "string" || config.model.length === 0)) bad(`api ${config.api} needs the served model's name`);
  if (config.api === "vllm-score" && typeof config.query !== "string") bad("api vllm-score needs a query (text_1)");
  if (config.positiveClass !== undefined && !(Number.isInteger(config.positiveClass) && config.positiveClass >= 0)) bad("positiveClass must be an integer >= 0");
  if (config.activation !== undefined && config.activation !== "sigmoid" && config.activation !== "none") bad(`activation must be "sigmoid" or "none"`);
  const int = (value: number | undefined, fallback: number, field: string, min: number, max: number): number => {
    if (value === undefined) return fallback;
    if (!Number.isInteger(value) || value < min || value > max) bad(`${field} must be an integer in [${min}, ${max}], got ${String(value)}`);
    return value;
  };
  return {
    ...config,
    timeoutMs: int(config.timeoutMs, 30_000, "timeoutMs", 1, 600_000),
    maxRetries: int(config.maxRetries, 2, "maxRetries", 0, 10),
    retryBaseDelayMs: int(config.retryBaseDelayMs, 250, "retryBaseDelayMs", 0, 60_000),
    retryMaxDelayMs: int(config.retryMaxDelayMs, 5_000, "retryMaxDelayMs", 0, 300_000),
  };
}

function requestBody(cfg: Settled, text: string): Record<string, unknown> {
  switch (cfg.api) {
    case "vllm-classify":
    case "vllm-pooling":
      return { model: cfg.model, input: text };
    case "vllm-score":
      return { model: cfg.model, text_1: cfg.query, text_2: text };
    case "plain":
      return { input: text };
  }
}

type Attempt =
  | { ok: true; body: string }
  | { ok: false; retryable: boolean; reason: string; status?: number; retryAfterMs?: number };

/** One POST, its body read under the same deadline as its headers. */
async function attemptOnce(cfg: Settled, body: string): Promise<Attempt> {
  const signal = AbortSignal.timeout(cfg.timeoutMs);
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (cfg.apiKey) headers.authorization = `Bearer ${cfg.apiKey}`;
  try {
    const response = await fetch(cfg.url, { method: "POST", headers, body, signal });
    const text = await response.text();
    if (response.ok) return { ok: true, body: text };
    const status = response.status;
    return {
      ok: false,
      retryable: status === 408 || status === 429 || status >= 500,
      status,
      reason: `HTTP ${status}${text.trim() ? `: ${preview(text)}` : ""}`,
      retryAfterMs: retryAfter(response.headers),
    };
  } catch (error) {
    if (signal.aborted) return { ok: false, retryable: true, reason: `no response within ${cfg.timeoutMs} ms (timed out)` };
    return { ok: false, retryable: true, reason: `connection failed: ${innermostMessage(error)}` };
  }
}

/** The score a 200 body carries, or an error naming what is wrong with it. */
function parseScore(cfg: Settled, text: string, attempts: number): number {
  const malformed = (problem: string): LlmixError =>
    failure(cfg, `answered with a malformed body: ${problem}: ${preview(text)}`, { attempts, status: 200, retryable: false, malformed: true });
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw malformed("not JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw malformed("not a JSON object");
  const b = body as Record<string, unknown>;
  if (cfg.api === "plain") return unitScore(b.score, "score", malformed);

  if (!Array.isArray(b.data) || b.data.length !== 1) throw malformed("data is not a list of one result");
  const item = b.data[0] as Record<string, unknown> | null;
  if (typeof item !== "object" || item === null) throw malformed("data[0] is not an object");
  switch (cfg.api) {
    case "vllm-classify": {
      const probs = item.probs;
      if (!Array.isArray(probs) || probs.length === 0) throw malformed("data[0].probs is not a non-empty list");
      const k = cfg.positiveClass ?? (probs.length >= 2 ? 1 : 0);
      if (k >= probs.length) throw malformed(`positive class ${k} is not among the ${probs.length} classes`);
      probs.forEach((p, i) => unitScore(p, `data[0].probs[${i}]`, malformed));
      return probs[k] as number;
    }
    case "vllm-score":
      return unitScore(item.score, "data[0].score", malformed);
    case "vllm-pooling": {
      // One reward per sequence: [r]; or per token (pooling over ALL tokens): [[r], ..., [r]], the last counts.
      let data = item.data;
      if (Array.isArray(data) && data.length > 0 && Array.isArray(data[data.length - 1])) data = data[data.length - 1];
      if (!Array.isArray(data) || data.length !== 1) throw malformed("data[0].data is not one pooled value ([r] or per-token [[r], ...])");
      const value = data[0];
      if (typeof value !== "number" || !Number.isFinite(value)) throw malformed("the pooled value is not a finite number");
      if ((cfg.activation ?? "sigmoid") === "sigmoid") return 1 / (1 + Math.exp(-value));
      return unitScore(value, "data[0].data", malformed);
    }
  }
}

function unitScore(value: unknown, field: string, malformed: (problem: string) => LlmixError): number {
  if (typeof value !== "number" || !Number.isFinite(value)) throw malformed(`${field} is not a finite number`);
  if (value < 0 || value > 1) throw malformed(`${field} ${value} is outside [0, 1]`);
  return value;
}

function failure(cfg: Settled, reason: string, details: Record<string, unknown>): LlmixError {
  return new LlmixError("verifier_failed", `reward model POST ${cfg.url} (${cfg.api}) failed: ${reason}`, { url: cfg.url, api: cfg.api, ...details });
}

function preview(text: string): string {
  const t = text.trim();
  return t.length > 300 ? `${t.slice(0, 300)}…` : t;
}



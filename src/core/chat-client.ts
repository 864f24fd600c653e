/**
 * One chat-completions call to an OpenAI-compatible server (vLLM, SGLang, Ollama, llama.cpp, OpenAI),
 * with the retries both of its callers need: the `openai` policy (src/rollout/policies) and the rubric
 * judge (src/rewards/judge.ts). It lives in core because both layers use it and it uses nothing above.
 *
 * Retries are this module's own loop (the client's `maxRetries` is 0): 408, 429, 5xx, connection errors
 * and timeouts are retried with exponential backoff (25% jitter, so parallel callers do not retry in
 * lockstep; a Retry-After header is honoured up to the maximum delay). Other statuses fail at once.
 * Exhausted or not, a failure is an LlmixError with the caller's code, naming the status and the
 * server's own error text (kept from the raw body: the client turns a body without an `error` key into
 * "status code (no body)").
 */
import { setTimeout as sleep } from "node:timers/promises";
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError } from "openai";
import type { ChatCompletion, ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";
import { LlmixError, type ErrorCode } from "./errors.js";
import { Rng } from "./rng.js";

/** Where the server is and how hard to try. */
export interface ChatServerConfig {
  /** The server's API root, `/v1` included. */
  baseURL: string;
  model: string;
  apiKey: string;
  /** Per-attempt time limit, body included. */
  timeoutMs: number;
  /** Retries after the first attempt. */
  maxRetries: number;
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
}

/** Who calls, for errors: the code they fail with and how messages name them ("openai policy"). */
export interface ChatCaller {
  code: ErrorCode;
  label: string;
}

/** A client of one server: `complete` sends a request with retries and returns the checked completion. */
export interface ChatClient {
  /** The full chat-completions URL (for messages). */
  endpoint: string;
  complete(body: ChatCompletionCreateParamsNonStreaming): Promise<ChatCompletion>;
}

/** Clients made in this thread (keys their jitter streams apart). */
let clients = 0;

/** A chat-completions client with the retry loop above. */
export function chatClient(cfg: ChatServerConfig, who: ChatCaller): ChatClient {
  const endpoint = `${cfg.baseURL.replace(/\/+$/, "")}/chat/completions`;
  let errorBody: string | undefined;
  // Jitter from a seeded stream, not Math.random (DESIGN §2: a judge runs inside environments); one
  // stream per client, so clients of one server still retry out of lockstep.
  const jitter = Rng.fromKey("llmix.chat-client", endpoint, ++clients);
  const client = new OpenAI({
    baseURL: cfg.baseURL,
    apiKey: cfg.apiKey,
    timeout: cfg.timeoutMs,
    maxRetries: 0,
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      errorBody = response.ok ? undefined : await response.clone().text().catch(() => undefined);
      return response;
    },
  });
  return {
    endpoint,
    async complete(body) {
      for (let attempt = 0; ; attempt++) {
        // The client's own timeout stops at the headers; this signal also bounds reading the body.
        const signal = AbortSignal.timeout(cfg.timeoutMs);
        let failure: Failure;
        try {
          const completion = await client.chat.completions.create(body, { signal });
          return checkCompletion(completion, endpoint, who);
        } catch (error) {
          if (error instanceof LlmixError) throw error;
          failure = describeFailure(error, errorBody, signal.aborted, cfg.timeoutMs);
        }
        if (!failure.retryable || attempt >= cfg.maxRetries) {
          const attempts = attempt + 1;
          throw new LlmixError(who.code, `${who.label}: POST ${endpoint} (model ${cfg.model}) failed${attempts > 1 ? ` after ${attempts} attempts` : ""}: ${failure.reason}`, {
            url: endpoint, model: cfg.model, attempts, status: failure.status ?? null, retryable: failure.retryable,
          });
        }
        const backoff = Math.min(cfg.retryMaxDelayMs, cfg.retryBaseDelayMs * 2 ** attempt) * (1 - jitter.float() * 0.25);
        await sleep(failure.retryAfterMs === undefined ? backoff : Math.min(cfg.retryMaxDelayMs, failure.retryAfterMs));
      }
    },
  };
}

interface Failure {
  retryable: boolean;
  reason: string;
  status?: number;
  retryAfterMs?: number;
}

/** Why an attempt failed, and whether another attempt may succeed. */
function describeFailure(error: unknown, body: string | undefined, timedOut: boolean, timeoutMs: number): Failure {
  if (error instanceof APIConnectionTimeoutError || (timedOut && !(error instanceof APIError && error.status !== undefined))) {
    return { retryable: true, reason: `no response within ${timeoutMs} ms (request timed out)` };
  }
  if (error instanceof APIConnectionError) {
    return { retryable: true, reason: `connection failed: ${innermostMessage(error)}` };
  }
  if (error instanceof APIError && typeof error.status === "number") {
    const status = error.status;
    const text = serverErrorText(body) ?? error.message.replace(/^\d{3}\s*/, "");
    const retryable = status === 408 || status === 429 || status >= 500;
    return { retryable, status, reason: `HTTP ${status}: ${text}`, retryAfterMs: retryAfter(error.headers) };
  }
  return { retryable: false, reason: error instanceof Error ? error.message : String(error) };
}

/** The server's own error text from a JSON error body (OpenAI, vLLM old and new, Ollama) or plain text. */
function serverErrorText(body: string | undefined): string | undefined {
  const text = body?.trim();
  if (!text) return undefined;
  try {
    const parsed = JSON.parse(text) as { error?: unknown; message?: unknown; detail?: unknown };
    const error = parsed.error as { message?: unknown } | string | undefined;
    if (typeof error === "string") return error;
    if (typeof error?.message === "string") return error.message;
    if (typeof parsed.message === "string") return parsed.message;
    if (typeof parsed.detail === "string") return parsed.detail;
  } catch {
    // not JSON: quote it as it is
  }
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

/** The root cause of a connection error ("connect ECONNREFUSED 127.0.0.1:9"), not undici's "fetch failed". */
export function innermostMessage(error: unknown): string {
  let current: unknown = error;
  let message = error instanceof Error ? error.message : String(error);
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current.message) message = current.message;
    current = (current as { cause?: unknown }).cause;
  }
  return message;
}

/** Retry-After (seconds or an HTTP date) or the non-standard retry-after-ms, in milliseconds. */
export function retryAfter(headers: Headers | undefined): number | undefined {
  const ms = Number.parseFloat(headers?.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers?.get("retry-after");
  if (!value) return undefined;
  const seconds = Number.parseFloat(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

/** A 200 whose body is not a chat completion is a broken server, not a model output. */
function checkCompletion(completion: unknown, endpoint: string, who: ChatCaller): ChatCompletion {
  const c = completion as Partial<ChatCompletion> | null;
  const message = Array.isArray(c?.choices) ? c.choices[0]?.message : undefined;
  if (!c || typeof c !== "object" || !message || typeof message !== "object") {
    const preview = typeof completion === "string" ? completion : JSON.stringify(completion);
    throw new LlmixError(who.code, `${who.label}: POST ${endpoint} returned no chat completion choice: ${String(preview).slice(0, 300)}`, {
      url: endpoint,
    });
  }
  return c as ChatCompletion;
}

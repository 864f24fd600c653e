/**
 * The `openai` policy: a model behind any OpenAI-compatible chat-completions server (vLLM, SGLang,
 * Ollama, llama.cpp, OpenAI itself) plays an episode, through the `openai` client.
 *
 * The episode becomes one chat: an optional system prompt, the reset observation as the first user
 * message, then per step the model's assistant message and what its action produced — a `tool` message
 * (answering the model's tool_call_id) after a tool call, a `user` message (the simulated user's reply)
 * after a message action. Tools go out as function definitions built from the episode's ToolSpecs.
 *
 * Decisions, each chosen so the trajectory shows what the model really did:
 * - Several tool calls in one response: only the first is acted on, and the conversation keeps only that
 *   one. An environment step takes one action; running the rest as later steps without asking the model
 *   would attach one model call's tokens to several steps, and keeping them in the history would leave
 *   calls without results (OpenAI answers 400 to that). `parallel_tool_calls: false` asks servers that
 *   honour it not to produce them.
 * - Arguments that are not JSON, or JSON that is not an object, are sent to the environment as they are
 *   (`args` the raw value): it answers with an invalid-action observation and the `invalid_call`
 *   component, and the episode goes on. Empty arguments mean `{}` (what vLLM does for no-argument tools).
 *   The model must see what it actually wrote: the tool message answering such a call quotes its
 *   arguments verbatim, then the environment's error. The assistant message in the history keeps the raw
 *   arguments too when `verbatimArguments` is set (servers that pass arguments through as text: OpenAI,
 *   llama.cpp); by default it carries "{}" there, because vLLM `json.loads` the arguments of earlier
 *   assistant tool calls to render the chat template (`_postprocess_messages` in
 *   vllm/entrypoints/chat_utils.py, unguarded), so a raw malformed string would turn every later request
 *   into an error.
 * - An unknown tool name is passed through: the environment answers `unknown_tool`.
 * - A response with neither content nor tool calls is the message action `""`: saying nothing is a
 *   valid action, and the environment (not the policy) decides what it is worth.
 * - A tool call without an id gets one ("c" + step, 9 alphanumerics, the form Mistral templates accept),
 *   so the tool message can still answer it.
 * - Token ids and logprobs: `return_token_ids: true` (vLLM: `prompt_token_ids` on the response,
 *   `token_ids` on the choice) and `logprobs: true` (`logprobs.content[].logprob`). Completion ids fall
 *   back to `logprobs.content[].token_id` (SGLang). A malformed list is dropped rather than stored
 *   misaligned. Servers that reject unknown fields (OpenAI itself) need `returnTokenIds: false`.
 * - Retries (src/core/chat-client.ts, shared with the rubric judge): 408, 429, 5xx, connection errors
 *   and timeouts are retried with exponential backoff (configurable); other statuses fail at once.
 *   Exhausted or not, a failure is LlmixError("policy_failed") naming the status and the server's own
 *   error text.
 */
import type {
  ChatCompletion,
  ChatCompletionAssistantMessageParam,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import type { Action, ToolSpec } from "../../core/contract.js";
import { chatClient } from "../../core/chat-client.js";
import { ValidationError } from "../../core/errors.js";
import type { Policy, PolicyData, PolicyDecision, PolicyTurn } from "../../core/policy.js";
import { withoutLengthLimits } from "../../tools/schema.js";

/** How to reach the model and how to sample from it. Only `baseURL` and `model` are required. */
export interface OpenAIPolicyConfig {
  /** The server's API root, `/v1` included, e.g. `http://127.0.0.1:8000/v1`. */
  baseURL: string;
  /** The served model name. */
  model: string;
  /** Bearer token. Default "EMPTY" (local servers ignore it; the client refuses to run without one). */
  apiKey?: string;
  /** Sent as the first message when set. */
  systemPrompt?: string;
  temperature?: number;
  topP?: number;
  /** Sent as `max_tokens`, the field vLLM, SGLang, Ollama and llama.cpp all accept. */
  maxTokens?: number;
  /** Sampling seed sent to the server (not the episode seed). */
  seed?: number;
  /** Per-attempt time limit, body included. Default 300000. */
  timeoutMs?: number;
  /** Retries after the first attempt, for 408, 429, 5xx, connection errors and timeouts. Default 3. */
  maxRetries?: number;
  /** Delay before the first retry; doubles per retry. Default 500. */
  retryBaseDelayMs?: number;
  /** Upper bound of one delay, Retry-After included. Default 8000. */
  retryMaxDelayMs?: number;
  /** Ask for per-token logprobs. Default true. */
  logprobs?: boolean;
  /** Ask for prompt and completion token ids (vLLM `return_token_ids`). Default true. */
  returnTokenIds?: boolean;
  /** Mark function definitions `strict: true` (the schemas are strict-mode compatible). Default true. */
  strictTools?: boolean;
  /**
   * Keep a malformed tool call's raw arguments in the assistant message of the history (default false:
   * "{}" there, which vLLM can render; the tool message quotes the raw arguments either way).
   */
  verbatimArguments?: boolean;
  /** More body fields (`top_k`, `chat_template_kwargs`, ...). The fields this policy sets take precedence. */
  extraBody?: Record<string, unknown>;
}

/** Defaults of the optional settings. */
export const OPENAI_POLICY_DEFAULTS = {
  apiKey: "EMPTY",
  timeoutMs: 300_000,
  maxRetries: 3,
  retryBaseDelayMs: 500,
  retryMaxDelayMs: 8_000,
  logprobs: true,
  returnTokenIds: true,
  strictTools: true,
  verbatimArguments: false,
} as const;

type Resolved = OpenAIPolicyConfig & Required<Pick<OpenAIPolicyConfig, keyof typeof OPENAI_POLICY_DEFAULTS>>;

/** The environment variables each setting is read from by `openaiConfigFromEnv`, first match wins. */
export const OPENAI_POLICY_ENV = {
  baseURL: ["LLMIX_OPENAI_BASE_URL", "OPENAI_BASE_URL"],
  model: ["LLMIX_MODEL", "OPENAI_MODEL"],
  apiKey: ["LLMIX_OPENAI_API_KEY", "OPENAI_API_KEY"],
  systemPrompt: ["LLMIX_OPENAI_SYSTEM_PROMPT"],
  temperature: ["LLMIX_OPENAI_TEMPERATURE"],
  topP: ["LLMIX_OPENAI_TOP_P"],
  maxTokens: ["LLMIX_OPENAI_MAX_TOKENS"],
  seed: ["LLMIX_OPENAI_SEED"],
  timeoutMs: ["LLMIX_OPENAI_TIMEOUT_MS"],
  maxRetries: ["LLMIX_OPENAI_MAX_RETRIES"],
  retryBaseDelayMs: ["LLMIX_OPENAI_RETRY_BASE_DELAY_MS"],
  retryMaxDelayMs: ["LLMIX_OPENAI_RETRY_MAX_DELAY_MS"],
  logprobs: ["LLMIX_OPENAI_LOGPROBS"],
  returnTokenIds: ["LLMIX_OPENAI_RETURN_TOKEN_IDS"],
  verbatimArguments: ["LLMIX_OPENAI_VERBATIM_ARGUMENTS"],
} as const satisfies Partial<Record<keyof OpenAIPolicyConfig, readonly string[]>>;

const NUMBER_KEYS = ["temperature", "topP", "maxTokens", "seed", "timeoutMs", "maxRetries", "retryBaseDelayMs", "retryMaxDelayMs"] as const;
const BOOLEAN_KEYS = ["logprobs", "returnTokenIds", "verbatimArguments"] as const;

/** A config from CLI flags, falling back to environment variables (see OPENAI_POLICY_ENV); flags win. */
export function openaiConfigFromEnv(flags: Partial<OpenAIPolicyConfig>, env: NodeJS.ProcessEnv = process.env): OpenAIPolicyConfig {
  const read = (key: keyof typeof OPENAI_POLICY_ENV): { name: string; value: string } | undefined => {
    for (const name of OPENAI_POLICY_ENV[key]) {
      const value = env[name]?.trim();
      if (value) return { name, value };
    }
    return undefined;
  };
  const baseURL = flags.baseURL || read("baseURL")?.value;
  if (!baseURL) {
    throw new ValidationError(
      "invalid_config",
      "the openai policy needs the server's URL: pass --base-url or set LLMIX_OPENAI_BASE_URL (or OPENAI_BASE_URL), e.g. http://127.0.0.1:8000/v1",
      { flag: "--base-url", env: [...OPENAI_POLICY_ENV.baseURL] },
    );
  }
  const model = flags.model || read("model")?.value;
  if (!model) {
    throw new ValidationError("invalid_config", "the openai policy needs a model name: pass --model or set LLMIX_MODEL (or OPENAI_MODEL)", {
      flag: "--model",
      env: [...OPENAI_POLICY_ENV.model],
    });
  }
  const config: OpenAIPolicyConfig = { ...flags, baseURL, model };
  const apiKey = flags.apiKey ?? read("apiKey")?.value;
  if (apiKey !== undefined) config.apiKey = apiKey;
  const systemPrompt = flags.systemPrompt ?? read("systemPrompt")?.value;
  if (systemPrompt !== undefined) config.systemPrompt = systemPrompt;
  for (const key of NUMBER_KEYS) {
    const found = flags[key] === undefined ? read(key) : undefined;
    if (!found) continue;
    const value = Number(found.value);
    if (!Number.isFinite(value)) throw new ValidationError("invalid_config", `${found.name} must be a number, got "${found.value}"`, { env: found.name });
    config[key] = value;
  }
  for (const key of BOOLEAN_KEYS) {
    const found = flags[key] === undefined ? read(key) : undefined;
    if (!found) continue;
    const value = parseBoolean(found.value);
    if (value === undefined) throw new ValidationError("invalid_config", `${found.name} must be true or false (1/0, yes/no), got "${found.value}"`, { env: found.name });
    config[key] = value;
  }
  return config;
}

/** A policy for one episode: it keeps the conversation, so build a new one per episode. */
export function openaiPolicy(config: OpenAIPolicyConfig): Policy {
  const cfg = resolveConfig(config);
  const chat = chatClient(cfg, { code: "policy_failed", label: "openai policy" });
  const messages: ChatCompletionMessageParam[] = [];
  // What the model did last: a tool call whose id the next tool message answers, or a message.
  let pending: LastMove | null = null;

  return {
    name: "openai",
    async act(turn: PolicyTurn): Promise<PolicyDecision> {
      // Built aside and committed only on success, so a failed call can be retried with the same turn.
      const next: ChatCompletionMessageParam[] = [];
      if (turn.step === 1 || messages.length === 0) {
        // Step 1 is a new episode even on a reused instance; a policy joining later starts from what it sees.
        if (cfg.systemPrompt) next.push({ role: "system", content: cfg.systemPrompt });
        next.push({ role: "user", content: turn.observation.rendered });
      } else if (pending?.kind === "tool") {
        const quoted = pending.malformed === undefined ? "" : malformedNote(pending.malformed);
        next.push(...messages, { role: "tool", tool_call_id: pending.id, content: quoted + turn.observation.rendered });
      } else {
        next.push(...messages, { role: "user", content: turn.observation.rendered });
      }

      const body: ChatCompletionCreateParamsNonStreaming & Record<string, unknown> = {
        ...cfg.extraBody,
        model: cfg.model,
        messages: next,
        stream: false,
      };
      if (turn.tools.length > 0) {
        body.tools = turn.tools.map((tool) => toOpenAITool(tool, cfg.strictTools));
        body.parallel_tool_calls = false;
      }
      if (cfg.temperature !== undefined) body.temperature = cfg.temperature;
      if (cfg.topP !== undefined) body.top_p = cfg.topP;
      if (cfg.maxTokens !== undefined) body.max_tokens = cfg.maxTokens;
      if (cfg.seed !== undefined) body.seed = cfg.seed;
      if (cfg.logprobs) body.logprobs = true;
      if (cfg.returnTokenIds) body.return_token_ids = true;

      const completion = await chat.complete(body);
      const { action, assistant, last } = interpret(completion, turn.step, cfg.verbatimArguments);
      messages.length = 0;
      messages.push(...next, assistant);
      pending = last;
      return { action, policy: policyData(completion) };
    },
  };
}

/** The function definition OpenAI-compatible servers expect for one of the episode's tools. */
/** Each tool's parameters in strict mode's form, made once (the same specs are sent on every turn). */
const strictParameters = new WeakMap<object, ToolSpec["parameters"]>();

function toOpenAITool(tool: ToolSpec, strict: boolean): ChatCompletionTool {
  // Strict mode refuses the length limits (see withoutLengthLimits); without it they are a useful hint.
  let parameters = tool.parameters;
  if (strict) {
    parameters = strictParameters.get(tool.parameters) ?? (withoutLengthLimits(tool.parameters) as ToolSpec["parameters"]);
    strictParameters.set(tool.parameters, parameters);
  }
  return {
    type: "function",
    function: { name: tool.name, description: tool.description, parameters, ...(strict ? { strict: true } : {}) },
  };
}

type ParsedArgs = { ok: true; args: Record<string, unknown>; text: string } | { ok: false; raw: unknown };

/** Tool-call arguments as an object, or the raw value when they are not a JSON object. */
function parseArguments(raw: unknown): ParsedArgs {
  if (raw === undefined || raw === null || (typeof raw === "string" && raw.trim() === "")) return { ok: true, args: {}, text: "{}" };
  // A few servers send the arguments already decoded.
  if (typeof raw === "object" && !Array.isArray(raw)) return { ok: true, args: raw as Record<string, unknown>, text: JSON.stringify(raw) };
  if (typeof raw !== "string") return { ok: false, raw };
  try {
    const value: unknown = JSON.parse(raw);
    if (value !== null && typeof value === "object" && !Array.isArray(value)) return { ok: true, args: value as Record<string, unknown>, text: raw };
  } catch {
    // malformed JSON: the environment answers the raw string as an invalid action
  }
  return { ok: false, raw };
}

interface WireToolCall {
  id?: unknown;
  type?: unknown;
  function?: { name?: unknown; arguments?: unknown };
}

/** What the model did last: a tool call (with its malformed arguments, if they were) or a message. */
type LastMove = { kind: "tool"; id: string; malformed?: string } | { kind: "message" };

/** The start of the tool message answering a call whose arguments were malformed: what the model wrote. */
function malformedNote(malformed: string): string {
  return `Your arguments were not a JSON object. You wrote, verbatim:\n${malformed}\n\n`;
}

/** Malformed arguments as text, exactly as the server sent them (a non-string is shown as its JSON). */
function rawText(raw: unknown): string {
  if (typeof raw === "string") return raw;
  try {
    return JSON.stringify(raw) ?? String(raw);
  } catch {
    return String(raw);
  }
}

/** The action a completion stands for, and the assistant message the conversation keeps for it. */
function interpret(
  completion: ChatCompletion,
  step: number,
  verbatimArguments: boolean,
): { action: Action | Record<string, unknown>; assistant: ChatCompletionAssistantMessageParam; last: LastMove } {
  const message = completion.choices[0]!.message;
  const calls = (Array.isArray(message.tool_calls) ? (message.tool_calls as WireToolCall[]) : []).filter(
    (call) => call !== null && typeof call === "object" && typeof call.function === "object" && call.function !== null,
  );
  const content = typeof message.content === "string" ? message.content : null;
  const first = calls[0];
  if (!first) {
    const text = content ?? (typeof message.refusal === "string" ? message.refusal : "");
    return { action: { type: "message", content: text }, assistant: { role: "assistant", content: text }, last: { kind: "message" } };
  }
  const id = typeof first.id === "string" && first.id !== "" ? first.id : `c${String(step).padStart(8, "0")}`;
  const tool = typeof first.function?.name === "string" ? first.function.name : "";
  const parsed = parseArguments(first.function?.arguments);
  const action = parsed.ok ? { type: "tool_call", tool, args: parsed.args, call_id: id } : { type: "tool_call", tool, args: parsed.raw, call_id: id };
  const malformed = parsed.ok ? undefined : rawText(parsed.raw);
  const historyArguments = parsed.ok ? parsed.text : verbatimArguments ? (malformed as string) : "{}";
  const assistant: ChatCompletionAssistantMessageParam = {
    role: "assistant",
    content,
    tool_calls: [{ id, type: "function", function: { name: tool, arguments: historyArguments } }],
  };
  return { action, assistant, last: malformed === undefined ? { kind: "tool", id } : { kind: "tool", id, malformed } };
}

/** Token ids, logprobs and model name as the server returned them; malformed lists are left out. */
function policyData(completion: ChatCompletion): PolicyData {
  const choice = completion.choices[0] as ChatCompletion["choices"][number] & { token_ids?: unknown };
  const content = (choice.logprobs?.content ?? null) as Array<{ logprob?: unknown; token_id?: unknown }> | null;
  const data: PolicyData = {};
  const prompt = tokenIds((completion as ChatCompletion & { prompt_token_ids?: unknown }).prompt_token_ids);
  if (prompt) data.prompt_token_ids = prompt;
  const ids = tokenIds(choice.token_ids) ?? tokenIds(Array.isArray(content) ? content.map((c) => c?.token_id) : undefined);
  if (ids) data.completion_token_ids = ids;
  if (Array.isArray(content) && content.every((c) => typeof c?.logprob === "number" && Number.isFinite(c.logprob))) {
    data.logprobs = content.map((c) => c.logprob as number);
  }
  if (typeof completion.model === "string") data.model = completion.model;
  return data;
}

function tokenIds(value: unknown): number[] | undefined {
  if (!Array.isArray(value) || !value.every((id) => Number.isSafeInteger(id) && (id as number) >= 0)) return undefined;
  return value as number[];
}

function parseBoolean(value: string): boolean | undefined {
  const v = value.toLowerCase();
  if (["1", "true", "yes", "on"].includes(v)) return true;
  if (["0", "false", "no", "off"].includes(v)) return false;
  return undefined;
}

/** The config with defaults applied; every value checked, so a typo fails before the first episode. */
function resolveConfig(config: OpenAIPolicyConfig): Resolved {
  const bad = (message: string, key: string): never => {
    throw new ValidationError("invalid_config", `openai policy: ${message}`, { key });
  };
  if (typeof config.baseURL !== "string" || config.baseURL.trim() === "") bad("baseURL is required (--base-url or LLMIX_OPENAI_BASE_URL)", "baseURL");
  let url: URL | undefined;
  try {
    url = new URL(config.baseURL);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) bad(`baseURL must be an http(s) URL, got "${config.baseURL}"`, "baseURL");
  if (typeof config.model !== "string" || config.model.trim() === "") bad("model is required (--model or LLMIX_MODEL)", "model");
  const cfg: Resolved = { ...OPENAI_POLICY_DEFAULTS, ...withoutUndefined(config) } as Resolved;
  const check = (key: keyof OpenAIPolicyConfig, ok: (v: number) => boolean, rule: string) => {
    const value = cfg[key];
    if (value === undefined) return;
    if (typeof value !== "number" || !Number.isFinite(value) || !ok(value)) bad(`${key} must be ${rule}, got ${String(value)}`, key);
  };
  check("temperature", (v) => v >= 0, "a number >= 0");
  check("topP", (v) => v > 0 && v <= 1, "a number in (0, 1]");
  check("maxTokens", (v) => Number.isSafeInteger(v) && v >= 1, "an integer >= 1");
  check("seed", (v) => Number.isSafeInteger(v), "an integer");
  check("timeoutMs", (v) => Number.isSafeInteger(v) && v >= 1, "an integer >= 1");
  check("maxRetries", (v) => Number.isSafeInteger(v) && v >= 0, "an integer >= 0");
  check("retryBaseDelayMs", (v) => v >= 0, "a number >= 0");
  check("retryMaxDelayMs", (v) => v >= 0, "a number >= 0");
  if (typeof cfg.apiKey !== "string" || cfg.apiKey === "") bad("apiKey must be a non-empty string", "apiKey");
  if (cfg.extraBody !== undefined && (cfg.extraBody === null || typeof cfg.extraBody !== "object" || Array.isArray(cfg.extraBody))) {
    bad("extraBody must be an object", "extraBody");
  }
  return cfg;
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

import { afterEach, describe, expect, it } from "vitest";
import type { Observation, ToolResult } from "../../core/contract.js";
import { LlmixError } from "../../core/errors.js";
import type { Policy } from "../../core/policy.js";
import { runPolicy, type PolicyRun } from "../../core/run-policy.js";
import type { AnyEnvironment } from "../../core/registry.js";
import { builtinRegistry } from "../../envs/index.js";
import { withoutLengthLimits } from "../../tools/schema.js";
import { errorCode } from "../../../test/helpers.js";
import {
  hang,
  httpError,
  reply,
  say,
  startOpenAIServer,
  toolCall,
  type OpenAIServer,
  type Script,
  type WireMessage,
} from "../../../test/fixtures/openai-server.js";
import { openaiConfigFromEnv, openaiPolicy, type OpenAIPolicyConfig } from "./openai.js";

const TASK = "billing-dispute/easy/seed-1";
const open: Array<{ close(): Promise<void> }> = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function server(script: Script): Promise<OpenAIServer> {
  const s = await startOpenAIServer(script);
  open.push(s);
  return s;
}

async function billingEnv(): Promise<{ env: AnyEnvironment; initial: Observation }> {
  const env = builtinRegistry().get("billing-dispute").create();
  open.push(env);
  return { env, initial: await env.reset(TASK, 1) };
}

/** Fast defaults: no retries and tiny delays unless a test asks for them. */
function policyFor(s: OpenAIServer, config: Partial<OpenAIPolicyConfig> = {}): Policy {
  return openaiPolicy({ baseURL: s.url, model: "test-model", maxRetries: 0, retryBaseDelayMs: 1, retryMaxDelayMs: 5, timeoutMs: 5_000, ...config });
}

/** Run the billing-dispute episode with the policy against a fixture server scripted with `script`. */
async function episode(script: Script, config: Partial<OpenAIPolicyConfig> = {}, maxSteps = 3) {
  const s = await server(script);
  const { env, initial } = await billingEnv();
  const run = await runPolicy(env, policyFor(s, config), { maxSteps, initial });
  return { server: s, env, initial, run };
}

/** The LlmixError a promise rejects with (fails the test on anything else). */
async function failure(promise: Promise<unknown>): Promise<LlmixError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(LlmixError);
    return error as LlmixError;
  }
  throw new LlmixError("internal", "expected a rejection");
}

const messagesOf = (s: OpenAIServer, i: number): WireMessage[] => s.requests[i]!.body.messages ?? [];
const toolResult = (run: PolicyRun, i: number) => run.transitions[i]!.result.info.tool_result as ToolResult;

describe("openaiConfigFromEnv", () => {
  it("reads every setting from the environment", () => {
    const config = openaiConfigFromEnv(
      {},
      {
        LLMIX_OPENAI_BASE_URL: "http://127.0.0.1:8000/v1",
        LLMIX_MODEL: "Qwen/Qwen2.5-1.5B-Instruct",
        OPENAI_API_KEY: "sk-local",
        LLMIX_OPENAI_TEMPERATURE: "0.7",
        LLMIX_OPENAI_MAX_TOKENS: "512",
        LLMIX_OPENAI_TIMEOUT_MS: "30000",
        LLMIX_OPENAI_MAX_RETRIES: "5",
        LLMIX_OPENAI_SEED: "42",
        LLMIX_OPENAI_SYSTEM_PROMPT: "Be brief.",
        LLMIX_OPENAI_RETURN_TOKEN_IDS: "false",
      },
    );
    expect(config).toEqual({
      baseURL: "http://127.0.0.1:8000/v1",
      model: "Qwen/Qwen2.5-1.5B-Instruct",
      apiKey: "sk-local",
      temperature: 0.7,
      maxTokens: 512,
      timeoutMs: 30000,
      maxRetries: 5,
      seed: 42,
      systemPrompt: "Be brief.",
      returnTokenIds: false,
    });
  });

  it("falls back to the OPENAI_* variables, and flags win over the environment", () => {
    const env = { OPENAI_BASE_URL: "http://localhost:11434/v1", OPENAI_MODEL: "llama3.1", LLMIX_OPENAI_TEMPERATURE: "1" };
    expect(openaiConfigFromEnv({}, env)).toEqual({ baseURL: "http://localhost:11434/v1", model: "llama3.1", temperature: 1 });
    expect(openaiConfigFromEnv({ model: "qwen3", temperature: 0 }, env)).toEqual({ baseURL: "http://localhost:11434/v1", model: "qwen3", temperature: 0 });
    expect(openaiConfigFromEnv({}, { ...env, LLMIX_OPENAI_BASE_URL: "http://a/v1", LLMIX_MODEL: "m" })).toMatchObject({ baseURL: "http://a/v1", model: "m" });
  });

  it("a missing base URL or model is invalid_config naming the flag and the variable", () => {
    const noUrl = (() => {
      try {
        openaiConfigFromEnv({ model: "m" }, {});
      } catch (error) {
        return error as LlmixError;
      }
    })();
    expect(noUrl?.code).toBe("invalid_config");
    expect(noUrl?.message).toContain("--base-url");
    expect(noUrl?.message).toContain("LLMIX_OPENAI_BASE_URL");
    let noModel: LlmixError | undefined;
    try {
      openaiConfigFromEnv({}, { OPENAI_BASE_URL: "http://x/v1", LLMIX_MODEL: "  " });
    } catch (error) {
      noModel = error as LlmixError;
    }
    expect(noModel?.code).toBe("invalid_config");
    expect(noModel?.message).toContain("--model");
    expect(noModel?.message).toContain("LLMIX_MODEL");
  });

  it("unparsable numbers and booleans are invalid_config naming the variable", () => {
    const base = { LLMIX_OPENAI_BASE_URL: "http://x/v1", LLMIX_MODEL: "m" };
    expect(errorCode(() => openaiConfigFromEnv({}, { ...base, LLMIX_OPENAI_TEMPERATURE: "warm" }))).toBe("invalid_config");
    expect(() => openaiConfigFromEnv({}, { ...base, LLMIX_OPENAI_LOGPROBS: "maybe" })).toThrow(/LLMIX_OPENAI_LOGPROBS/);
  });

  it("openaiPolicy rejects a bad config before any request", () => {
    const ok = { baseURL: "http://127.0.0.1:1/v1", model: "m" };
    expect(errorCode(() => openaiPolicy({ ...ok, baseURL: "" }))).toBe("invalid_config");
    expect(errorCode(() => openaiPolicy({ ...ok, baseURL: "ftp://host/v1" }))).toBe("invalid_config");
    expect(errorCode(() => openaiPolicy({ ...ok, model: "" }))).toBe("invalid_config");
    expect(errorCode(() => openaiPolicy({ ...ok, temperature: -1 }))).toBe("invalid_config");
    expect(errorCode(() => openaiPolicy({ ...ok, maxRetries: 1.5 }))).toBe("invalid_config");
    expect(errorCode(() => openaiPolicy({ ...ok, timeoutMs: 0 }))).toBe("invalid_config");
    expect(errorCode(() => openaiPolicy(ok))).toBeUndefined();
  });
});

describe("an episode of billing-dispute against an OpenAI-compatible server", () => {
  it("tool calls, messages and their results make one conversation", async () => {
    const { server: s, env, initial, run } = await episode(
      [
        toolCall("get_agent_profile", {}, "call_a"),
        say("Hello! Please tell me the email address on your account."),
        toolCall("lookup_customer", { query: "someone@example.com" }, "call_b"),
      ],
      { systemPrompt: "You are a billing agent.", temperature: 0.2, maxTokens: 300, seed: 7 },
    );
    expect(s.requests).toHaveLength(3);
    expect(run.transitions).toHaveLength(3);

    // First request: system prompt, the task as one user message, the episode's tools, sampling settings.
    const first = s.requests[0]!;
    expect(first.path).toBe("/v1/chat/completions");
    expect(first.headers.authorization).toBe("Bearer EMPTY");
    expect(first.body.messages).toEqual([
      { role: "system", content: "You are a billing agent." },
      { role: "user", content: initial.rendered },
    ]);
    expect(first.body.tools).toEqual(
      env.tools().map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: withoutLengthLimits(t.parameters), strict: true } })),
    );
    // Strict mode documents no string length keywords: none is sent, though the tools declare some.
    expect(JSON.stringify(env.tools().map((t) => t.parameters))).toMatch(/"maxLength"/);
    expect(JSON.stringify(first.body.tools)).not.toMatch(/"(max|min)Length"/);
    expect(first.body).toMatchObject({
      model: "test-model",
      stream: false,
      temperature: 0.2,
      max_tokens: 300,
      seed: 7,
      logprobs: true,
      return_token_ids: true,
      parallel_tool_calls: false,
    });

    // The tool call became an action carrying the model's id; the second request answers that id with the result.
    expect(run.transitions[0]!.action).toEqual({ type: "tool_call", tool: "get_agent_profile", args: {}, call_id: "call_a" });
    expect(toolResult(run, 0).status).toBe("ok");
    expect(messagesOf(s, 1).slice(0, 2)).toEqual(first.body.messages);
    expect(messagesOf(s, 1).slice(2)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "call_a", type: "function", function: { name: "get_agent_profile", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "call_a", content: run.transitions[0]!.result.observation.rendered },
    ]);
    expect(run.transitions[0]!.result.observation.rendered).toContain("cap");

    // The message became a message action; the customer's reply comes back as a user message.
    expect(run.transitions[1]!.action).toEqual({ type: "message", content: "Hello! Please tell me the email address on your account." });
    const reply1 = run.transitions[1]!.result.observation.rendered;
    expect(reply1).toMatch(/^Customer: /);
    expect(messagesOf(s, 2).slice(0, 4)).toEqual(messagesOf(s, 1));
    expect(messagesOf(s, 2).slice(4)).toEqual([
      { role: "assistant", content: "Hello! Please tell me the email address on your account." },
      { role: "user", content: reply1 },
    ]);

    expect(run.transitions[2]!.action).toEqual({ type: "tool_call", tool: "lookup_customer", args: { query: "someone@example.com" }, call_id: "call_b" });
    expect(toolResult(run, 2).status).toBe("ok");
  });

  it("token ids, logprobs and the model name land in each transition's policy data", async () => {
    const { server: s, run } = await episode(
      [
        toolCall("get_agent_profile", {}, "call_a", { promptTokenIds: [1, 2, 3], completionTokenIds: [10, 11, 12], logprobs: [-0.1, -0.2, -0.3], model: "served-model" }),
        say("Hi, how can I help?"),
      ],
      {},
      2,
    );
    expect(run.transitions[0]!.policy).toEqual({ prompt_token_ids: [1, 2, 3], completion_token_ids: [10, 11, 12], logprobs: [-0.1, -0.2, -0.3], model: "served-model" });
    // The second answer uses the fixture's own tokenisation: the policy keeps exactly what was sent.
    const sent = s.responses[1] as {
      prompt_token_ids: number[];
      model: string;
      choices: Array<{ token_ids: number[]; logprobs: { content: Array<{ logprob: number }> } }>;
    };
    const policy = run.transitions[1]!.policy!;
    expect(policy.prompt_token_ids).toEqual(sent.prompt_token_ids);
    expect(policy.completion_token_ids).toEqual(sent.choices[0]!.token_ids);
    expect(policy.logprobs).toEqual(sent.choices[0]!.logprobs.content.map((c) => c.logprob));
    expect(policy.completion_token_ids!.length).toBeGreaterThan(0);
    expect(policy.logprobs).toHaveLength(policy.completion_token_ids!.length);
    expect(policy.model).toBe("test-model");
  });

  it("without token ids or logprobs asked for, neither is requested and only the model is kept", async () => {
    const { server: s, run } = await episode([say("Hello")], { returnTokenIds: false, logprobs: false }, 1);
    expect(s.requests[0]!.body).not.toHaveProperty("return_token_ids");
    expect(s.requests[0]!.body).not.toHaveProperty("logprobs");
    expect(run.transitions[0]!.policy).toEqual({ model: "test-model" });
  });

  it("malformed arguments JSON is an invalid action: invalid_call is charged and the episode goes on", async () => {
    const { server: s, run } = await episode([toolCall("lookup_customer", '{"query": "jane', "call_bad"), toolCall("get_agent_profile", "[1, 2]", "call_arr"), say("Sorry about that.")]);
    expect(run.transitions).toHaveLength(3);
    const [bad, array] = run.transitions;
    expect(bad!.action).toEqual({ type: "tool_call", tool: "lookup_customer", args: '{"query": "jane', call_id: "call_bad" });
    expect(bad!.result.rewardComponents.invalid_call).toBeLessThan(0);
    expect((bad!.result.info.error as { code: string }).code).toBe("invalid_action");
    expect(bad!.result.terminated || bad!.result.truncated).toBe(false);
    // JSON that is not an object is invalid too.
    expect(array!.action).toMatchObject({ tool: "get_agent_profile", args: "[1, 2]" });
    expect(array!.result.rewardComponents.invalid_call).toBeLessThan(0);
    // The history re-sends the call with arguments vLLM can render; the tool message quotes what the model
    // wrote, verbatim, then the environment's answer.
    expect(messagesOf(s, 1).slice(-2)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "call_bad", type: "function", function: { name: "lookup_customer", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "call_bad", content: `Your arguments were not a JSON object. You wrote, verbatim:\n{"query": "jane\n\n${bad!.result.observation.rendered}` },
    ]);
    expect((messagesOf(s, 2).at(-1) as { content: string }).content).toContain("You wrote, verbatim:\n[1, 2]\n");
    expect(bad!.result.observation.rendered).toContain("Invalid action");
    expect(run.transitions[2]!.action).toEqual({ type: "message", content: "Sorry about that." });
  });

  it("verbatimArguments keeps a malformed call's raw arguments in the assistant message too", async () => {
    const { server: s, run } = await episode([toolCall("lookup_customer", '{"query": "jane', "call_bad"), say("Sorry.")], { verbatimArguments: true }, 2);
    const bad = run.transitions[0]!;
    expect(messagesOf(s, 1).slice(-2)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "call_bad", type: "function", function: { name: "lookup_customer", arguments: '{"query": "jane' } }] },
      { role: "tool", tool_call_id: "call_bad", content: `Your arguments were not a JSON object. You wrote, verbatim:\n{"query": "jane\n\n${bad.result.observation.rendered}` },
    ]);
  });

  it("well-formed arguments are re-sent as the model wrote them, with no note in the tool message", async () => {
    const { server: s, run } = await episode([toolCall("lookup_customer", '{"query":  "jane"}', "call_ok"), say("Done.")], {}, 2);
    expect(messagesOf(s, 1).slice(-2)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "call_ok", type: "function", function: { name: "lookup_customer", arguments: '{"query":  "jane"}' } }] },
      { role: "tool", tool_call_id: "call_ok", content: run.transitions[0]!.result.observation.rendered },
    ]);
  });

  it("an unknown tool is passed through and answered with unknown_tool", async () => {
    const { server: s, run } = await episode([toolCall("delete_everything", { confirm: true }, "call_x"), say("Hello")], {}, 2);
    const t = run.transitions[0]!;
    expect(t.action).toEqual({ type: "tool_call", tool: "delete_everything", args: { confirm: true }, call_id: "call_x" });
    expect(toolResult(run, 0)).toMatchObject({ status: "invalid", error: { code: "unknown_tool" } });
    expect(t.result.rewardComponents.invalid_call).toBeLessThan(0);
    expect(t.result.observation.rendered).toContain('unknown tool "delete_everything"');
    expect(messagesOf(s, 1).at(-1)).toEqual({ role: "tool", tool_call_id: "call_x", content: t.result.observation.rendered });
    expect(run.transitions).toHaveLength(2);
  });

  it("several tool calls in one answer: the first is acted on and the conversation keeps only it", async () => {
    const both = reply({
      content: "Let me check two things.",
      toolCalls: [
        { id: "c1", name: "get_agent_profile", arguments: {} },
        { id: "c2", name: "lookup_customer", arguments: { query: "jane" } },
      ],
    });
    const { server: s, run } = await episode([both, say("Hello")], {}, 2);
    expect(run.transitions[0]!.action).toEqual({ type: "tool_call", tool: "get_agent_profile", args: {}, call_id: "c1" });
    expect(messagesOf(s, 1).slice(1)).toEqual([
      { role: "assistant", content: "Let me check two things.", tool_calls: [{ id: "c1", type: "function", function: { name: "get_agent_profile", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c1", content: run.transitions[0]!.result.observation.rendered },
    ]);
  });

  it("an empty answer is the empty message: the environment answers it and the episode goes on", async () => {
    const { server: s, run } = await episode([reply({ content: null }), reply({ content: "" }), say("Hello")]);
    expect(run.transitions[0]!.action).toEqual({ type: "message", content: "" });
    expect(run.transitions[1]!.action).toEqual({ type: "message", content: "" });
    expect(run.transitions).toHaveLength(3);
    expect(messagesOf(s, 1).slice(1)).toEqual([
      { role: "assistant", content: "" },
      { role: "user", content: run.transitions[0]!.result.observation.rendered },
    ]);
  });

  it("a tool call without an id gets one, and empty arguments mean {}", async () => {
    const { server: s, run } = await episode([reply({ toolCalls: [{ id: "", name: "get_agent_profile", arguments: "" }] }), say("Hello")], {}, 2);
    expect(run.transitions[0]!.action).toEqual({ type: "tool_call", tool: "get_agent_profile", args: {}, call_id: "c00000001" });
    expect(toolResult(run, 0).status).toBe("ok");
    const [assistant, tool] = messagesOf(s, 1).slice(1);
    expect(assistant!.tool_calls![0]!.id).toBe("c00000001");
    expect(tool).toMatchObject({ role: "tool", tool_call_id: "c00000001" });
  });

  it("step 1 starts a new conversation, even on a reused instance", async () => {
    const s = await server([say("first"), say("second")]);
    const policy = policyFor(s);
    const { env } = await billingEnv();
    for (const seed of [1, 2]) {
      const initial = await env.reset(TASK, seed);
      await runPolicy(env, policy, { maxSteps: 1, initial });
    }
    expect(messagesOf(s, 1)).toHaveLength(1);
    expect(messagesOf(s, 1)[0]!.role).toBe("user");
  });

  it("extraBody fields reach the server but do not override the policy's own", async () => {
    const { server: s } = await episode([say("Hello")], { extraBody: { top_k: 20, chat_template_kwargs: { enable_thinking: false }, model: "other" } }, 1);
    expect(s.requests[0]!.body).toMatchObject({ top_k: 20, chat_template_kwargs: { enable_thinking: false }, model: "test-model" });
  });
});

describe("server failures", () => {
  it("429 twice, then success: retried with exponential backoff, the same request each time", async () => {
    const { server: s, run } = await episode(
      [httpError(429, "rate limited"), httpError(429, "rate limited"), toolCall("get_agent_profile", {}, "call_a")],
      { maxRetries: 3, retryBaseDelayMs: 40, retryMaxDelayMs: 1_000 },
      1,
    );
    expect(s.requests).toHaveLength(3);
    expect(run.transitions[0]!.action).toMatchObject({ type: "tool_call", tool: "get_agent_profile" });
    const [a, b, c] = s.requests.map((r) => r.at);
    // Delays are base * 2^n, less up to 25% jitter: >= 30 ms, then >= 60 ms.
    expect(b! - a!).toBeGreaterThanOrEqual(28);
    expect(c! - b!).toBeGreaterThanOrEqual(58);
    expect(messagesOf(s, 2)).toEqual(messagesOf(s, 0));
  });

  it("Retry-After is honoured, up to the maximum delay", { timeout: 10_000 }, async () => {
    const { server: s } = await episode(
      [httpError(429, "slow down", { headers: { "retry-after": "0.06" } }), httpError(503, "overloaded", { headers: { "retry-after": "30" } }), say("Hello")],
      { maxRetries: 2, retryBaseDelayMs: 1, retryMaxDelayMs: 100 },
      1,
    );
    const [a, b, c] = s.requests.map((r) => r.at);
    expect(b! - a!).toBeGreaterThanOrEqual(55);
    expect(c! - b!).toBeGreaterThanOrEqual(95);
  });

  it("500 forever: policy_failed after the configured retries, quoting the status and the server's text", async () => {
    const s = await server(() => httpError(500, "engine crashed: CUDA out of memory"));
    const { env, initial } = await billingEnv();
    const error = await failure(runPolicy(env, policyFor(s, { maxRetries: 2 }), { maxSteps: 3, initial }));
    expect(error.code).toBe("policy_failed");
    expect(error.message).toContain("HTTP 500");
    expect(error.message).toContain("engine crashed: CUDA out of memory");
    expect(error.message).toContain("after 3 attempts");
    expect(error.details).toMatchObject({ attempts: 3, status: 500, model: "test-model" });
    expect(s.requests).toHaveLength(3);
  });

  it("a 400 is not retried; vLLM's older error body is quoted; a failed act can be repeated", async () => {
    const legacy = { object: "error", message: "This model's maximum context length is 4096 tokens.", type: "BadRequestError", param: null, code: 400 };
    const s = await server([httpError(400, "", { body: legacy }), say("Hello")]);
    const { initial, env } = await billingEnv();
    const policy = policyFor(s, { maxRetries: 3 });
    const turn = { step: 1, observation: initial, tools: env.tools(), history: [] };
    const error = await failure(Promise.resolve(policy.act(turn)));
    expect(error.code).toBe("policy_failed");
    expect(error.message).toContain("HTTP 400: This model's maximum context length is 4096 tokens.");
    expect(s.requests).toHaveLength(1);
    // Nothing of the failed call stayed in the conversation.
    expect(await policy.act(turn)).toMatchObject({ action: { type: "message", content: "Hello" } });
    expect(messagesOf(s, 1)).toEqual(messagesOf(s, 0));
  });

  it("a server that never answers times out: policy_failed", async () => {
    const s = await server(() => hang());
    const { env, initial } = await billingEnv();
    const started = performance.now();
    const error = await failure(runPolicy(env, policyFor(s, { timeoutMs: 150, maxRetries: 1 }), { maxSteps: 3, initial }));
    expect(error.code).toBe("policy_failed");
    expect(error.message).toContain("timed out");
    expect(error.message).toContain("after 2 attempts");
    expect(s.requests).toHaveLength(2);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it("a refused connection is retried, then policy_failed", async () => {
    const gone = await startOpenAIServer([]);
    await gone.close();
    const { env, initial } = await billingEnv();
    const policy = openaiPolicy({ baseURL: gone.url, model: "m", maxRetries: 2, retryBaseDelayMs: 1, retryMaxDelayMs: 5 });
    const error = await failure(runPolicy(env, policy, { maxSteps: 1, initial }));
    expect(error.code).toBe("policy_failed");
    expect(error.message).toMatch(/connection failed: .*ECONNREFUSED/);
    expect(error.message).toContain("after 3 attempts");
  });

  it("a 200 that is not a chat completion is policy_failed, not an action", async () => {
    const s = await server([{ kind: "raw", status: 200, body: "<html>proxy error</html>", contentType: "text/html" }, { kind: "raw", status: 200, body: '{"choices": []}', contentType: "application/json" }]);
    const { env, initial } = await billingEnv();
    const turn = { step: 1, observation: initial, tools: env.tools(), history: [] };
    const policy = policyFor(s, { maxRetries: 3 });
    for (let i = 0; i < 2; i++) {
      const error = await failure(Promise.resolve(policy.act(turn)));
      expect(error.code).toBe("policy_failed");
      expect(error.message).toContain("no chat completion choice");
    }
    expect(s.requests).toHaveLength(2);
  });
});

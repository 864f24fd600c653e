import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { LlmixError } from "../../core/errors.js";
import type { StoredEpisode } from "../../store/types.js";
import { runVerifier } from "../verifier.js";
import { renderTrajectory } from "./features.js";
import { httpRewardModel, httpRewardModelVerifier, type HttpRewardModelConfig } from "./http.js";
import { syntheticEpisodes } from "./test-support.js";

interface Received {
  url: string;
  body: Record<string, unknown>;
  authorization: string | undefined;
}

type Handler = (req: Received, res: ServerResponse, attempt: number) => void;

const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

/** A local server answering with `handler`; resolves with its base URL and what it received. */
async function serve(handler: Handler): Promise<{ base: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = "";
    req.on("data", (chunk: Buffer) => (raw += chunk.toString("utf8")));
    req.on("end", () => {
      const r: Received = { url: req.url ?? "", body: JSON.parse(raw) as Record<string, unknown>, authorization: req.headers.authorization };
      received.push(r);
      handler(r, res, received.length);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(typeof body === "string" ? body : JSON.stringify(body));
}

const fast = { retryBaseDelayMs: 5, retryMaxDelayMs: 20 } satisfies Partial<HttpRewardModelConfig>;

async function failure(promise: Promise<unknown>): Promise<LlmixError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LlmixError);
  expect((error as LlmixError).code).toBe("verifier_failed");
  return error as LlmixError;
}

describe("httpRewardModel", () => {
  it("speaks vLLM's /classify: {model, input} -> data[0].probs, the positive class", async () => {
    const { base, received } = await serve((_req, res) =>
      json(res, 200, { id: "classify-1", object: "list", created: 1, model: "rm", data: [{ index: 0, label: "good", probs: [0.2, 0.8], num_classes: 2 }], usage: {} }),
    );
    const rm = httpRewardModel({ url: `${base}/classify`, api: "vllm-classify", model: "rm", apiKey: "k-123", ...fast });
    expect(await rm.score("a trajectory")).toBe(0.8);
    expect(received[0]).toEqual({ url: "/classify", body: { model: "rm", input: "a trajectory" }, authorization: "Bearer k-123" });
    const first = httpRewardModel({ url: `${base}/classify`, api: "vllm-classify", model: "rm", positiveClass: 0 });
    expect(await first.score("x")).toBe(0.2);
  });

  it("speaks vLLM's /score and /pooling, and the plain {input} -> {score}", async () => {
    const { base, received } = await serve((req, res) => {
      if (req.url === "/score") json(res, 200, { object: "list", model: "ce", data: [{ index: 0, object: "score", score: 0.7 }], usage: {} });
      else if (req.url === "/pooling") json(res, 200, { object: "list", model: "rw", data: [{ index: 0, object: "pooling", data: [[-1], [2]] }], usage: {} });
      else if (req.url === "/pooling-prob") json(res, 200, { data: [{ index: 0, object: "pooling", data: [0.3] }] });
      else json(res, 200, { score: 0.25 });
    });
    expect(await httpRewardModel({ url: `${base}/score`, api: "vllm-score", model: "ce", query: "Was the dispute resolved?" }).score("t")).toBe(0.7);
    expect(received[0]!.body).toEqual({ model: "ce", text_1: "Was the dispute resolved?", text_2: "t" });
    expect(await httpRewardModel({ url: `${base}/pooling`, api: "vllm-pooling", model: "rw" }).score("t")).toBeCloseTo(1 / (1 + Math.exp(-2)), 12);
    expect(received[1]!.body).toEqual({ model: "rw", input: "t" });
    expect(await httpRewardModel({ url: `${base}/pooling-prob`, api: "vllm-pooling", model: "rw", activation: "none" }).score("t")).toBe(0.3);
    expect(await httpRewardModel({ url: `${base}/plain`, api: "plain" }).score("t")).toBe(0.25);
    expect(received[3]!.body).toEqual({ input: "t" });
  });

  it("retries a 503 with backoff, then succeeds", async () => {
    const { base, received } = await serve((_req, res, attempt) => {
      if (attempt < 3) json(res, 503, { error: { message: "warming up" } });
      else json(res, 200, { score: 0.9 });
    });
    const started = Date.now();
    expect(await httpRewardModel({ url: base, api: "plain", maxRetries: 2, retryBaseDelayMs: 40, retryMaxDelayMs: 1000 }).score("t")).toBe(0.9);
    expect(received).toHaveLength(3);
    // Backoffs of ~40 and ~80 ms (less at most a quarter of jitter).
    expect(Date.now() - started).toBeGreaterThanOrEqual(85);
  });

  it("gives up after the last retry, naming the status; a 400 is not retried", async () => {
    const { base, received } = await serve((req, res) => (req.url === "/bad" ? json(res, 400, { error: { message: "input too long" } }) : json(res, 500, "boom")));
    const error = await failure(httpRewardModel({ url: `${base}/down`, api: "plain", maxRetries: 1, ...fast }).score("t"));
    expect(error.message).toMatch(/HTTP 500: boom \(after 2 attempts\)/);
    expect(error.details).toMatchObject({ attempts: 2, status: 500, retryable: true });
    const rejected = await failure(httpRewardModel({ url: `${base}/bad`, api: "plain", maxRetries: 3, ...fast }).score("t"));
    expect(rejected.message).toMatch(/HTTP 400: .*input too long/);
    expect(rejected.details).toMatchObject({ attempts: 1, status: 400, retryable: false });
    expect(received.filter((r) => r.url === "/bad")).toHaveLength(1);
  });

  it("honours Retry-After up to the maximum delay", async () => {
    const { base, received } = await serve((_req, res, attempt) => (attempt === 1 ? json(res, 429, "slow down", { "retry-after": "3600" }) : json(res, 200, { score: 0.5 })));
    const started = Date.now();
    expect(await httpRewardModel({ url: base, api: "plain", maxRetries: 1, retryBaseDelayMs: 1, retryMaxDelayMs: 50 }).score("t")).toBe(0.5);
    expect(received).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("times out a server that never answers, on every attempt", async () => {
    const { base, received } = await serve(() => {
      // never respond
    });
    const started = Date.now();
    const error = await failure(httpRewardModel({ url: base, api: "plain", timeoutMs: 150, maxRetries: 1, ...fast }).score("t"));
    expect(error.message).toMatch(/no response within 150 ms \(timed out\) \(after 2 attempts\)/);
    expect(received).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("times out a body that stops halfway", async () => {
    const { base } = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"score": ');
    });
    const error = await failure(httpRewardModel({ url: base, api: "plain", timeoutMs: 150, maxRetries: 0 }).score("t"));
    expect(error.message).toMatch(/timed out/);
  });

  it("reports a connection that is refused", async () => {
    const { base } = await serve((_req, res) => json(res, 200, { score: 1 }));
    const server = servers.pop()!;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const error = await failure(httpRewardModel({ url: base, api: "plain", maxRetries: 1, ...fast }).score("t"));
    expect(error.message).toMatch(/connection failed: .*ECONNREFUSED.*\(after 2 attempts\)/);
  });

  const malformed: Array<[string, HttpRewardModelConfig["api"], unknown, RegExp]> = [
    ["a body that is not JSON", "plain", "<html>oops</html>", /not JSON/],
    ["a JSON list", "plain", [0.5], /not a JSON object/],
    ["no score", "plain", { result: 0.5 }, /score is not a finite number/],
    ["a score as a string", "plain", { score: "0.5" }, /score is not a finite number/],
    ["a score above 1", "plain", { score: 1.5 }, /score 1\.5 is outside \[0, 1\]/],
    ["no data", "vllm-classify", { object: "list" }, /data is not a list of one result/],
    ["two results for one input", "vllm-classify", { data: [{ probs: [0.5, 0.5] }, { probs: [0.5, 0.5] }] }, /data is not a list of one result/],
    ["probs that are not a list", "vllm-classify", { data: [{ probs: "0.9" }] }, /probs is not a non-empty list/],
    ["a probability above 1", "vllm-classify", { data: [{ probs: [-0.5, 1.5] }] }, /probs\[0\] is not|probs\[0\] -0\.5 is outside/],
    ["a score out of range", "vllm-score", { data: [{ score: 3.2 }] }, /data\[0\]\.score 3\.2 is outside/],
    ["a multi-label pooled row", "vllm-pooling", { data: [{ data: [[0.1, 0.9]] }] }, /not one pooled value/],
    ["a base64 pooled value", "vllm-pooling", { data: [{ data: "AAAA" }] }, /not one pooled value/],
  ];
  it.each(malformed)("refuses %s as an error, not a score, and does not retry it", async (_what, api, body, message) => {
    const { base, received } = await serve((_req, res) => json(res, 200, body));
    const error = await failure(httpRewardModel({ url: base, api, model: "m", query: "q", maxRetries: 3, ...fast }).score("t"));
    expect(error.message).toMatch(/answered with a malformed body/);
    expect(error.message).toMatch(message);
    expect(error.details).toMatchObject({ malformed: true, attempts: 1 });
    expect(received).toHaveLength(1);
  });

  it("refuses a bad configuration when built", () => {
    expect(() => httpRewardModel({ url: "not a url", api: "plain" })).toThrow(/is not a URL/);
    expect(() => httpRewardModel({ url: "ftp://x", api: "plain" })).toThrow(/http or https/);
    expect(() => httpRewardModel({ url: "http://x", api: "vllm-classify" })).toThrow(/needs the served model's name/);
    expect(() => httpRewardModel({ url: "http://x", api: "vllm-score", model: "m" })).toThrow(/needs a query/);
    expect(() => httpRewardModel({ url: "http://x", api: "plain", timeoutMs: 0 })).toThrow(/timeoutMs must be/);
    expect(() => httpRewardModel({ url: "http://x", api: "grpc" as never })).toThrow(/api must be one of/);
  });
});

describe("httpRewardModelVerifier", () => {
  it("scores the rendered trajectory, and a server failure is a verifier failure", async () => {
    const { base, received } = await serve((req, res) => (req.url === "/ok" ? json(res, 200, { score: 0.6 }) : json(res, 200, { nope: true })));
    const [episode] = syntheticEpisodes("http-verifier", 1);
    const verifier = httpRewardModelVerifier<StoredEpisode>("served-rm", httpRewardModel({ url: `${base}/ok`, api: "plain" }), (e) => renderTrajectory(e.steps), { threshold: 0.55 });
    const result = await runVerifier(verifier, episode!);
    expect(result).toEqual({ score: 0.6, passed: true, details: { url: `${base}/ok`, api: "plain", score: 0.6, threshold: 0.55 } });
    expect(received[0]!.body).toEqual({ input: renderTrajectory(episode!.steps) });
    expect(received[0]!.body.input).toContain("[tool call] lookup_customer");

    const broken = httpRewardModelVerifier<StoredEpisode>("served-rm", httpRewardModel({ url: `${base}/broken`, api: "plain" }), (e) => renderTrajectory(e.steps));
    const error = await runVerifier(broken, episode!).catch((e: unknown) => e as LlmixError);
    expect(error).toBeInstanceOf(LlmixError);
    expect((error as LlmixError).code).toBe("verifier_failed");
    expect((error as LlmixError).message).toMatch(/served-rm.*malformed body/);
  });
});

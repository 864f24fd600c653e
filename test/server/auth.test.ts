/**
 * Auth: bearer tokens with scopes over HTTP and the WebSocket upgrade, malformed auth files, and the
 * loopback-only rule of a server without --auth.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LlmixError } from "../../src/core/errors.js";
import { builtinRegistry } from "../../src/envs/index.js";
import { bearerToken, isLoopback, TokenAuth } from "../../src/server/auth.js";
import { startServer } from "../../src/server/serve.js";
import { api, startTestServer, TASK, WsClient, type TestServer } from "./service-helpers.js";

const TOKENS = {
  tokens: [
    { token: "run-token-0123456789", scopes: ["env:run"], name: "trainer" },
    { token: "read-token-0123456789", scopes: ["trajectories:read"], name: "analyst" },
    { token: "admin-token-0123456789", scopes: ["admin"], name: "ops" },
  ],
};
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const RUN = bearer("run-token-0123456789");
const READ = bearer("read-token-0123456789");
const ADMIN = bearer("admin-token-0123456789");

let server: TestServer;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "llmix-auth-"));
  server = await startTestServer({ auth: TokenAuth.fromConfig(TOKENS) });
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return error instanceof LlmixError ? `${error.code}: ${error.message}` : String(error);
  }
  return undefined;
}

describe("auth files", () => {
  it("malformed files are invalid_config naming the problem", () => {
    const file = (name: string, text: string) => {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    };
    expect(code(() => TokenAuth.fromFile(join(dir, "missing.json")))).toMatch(/^invalid_config: .*cannot read/);
    expect(code(() => TokenAuth.fromFile(file("bad.json", "{tokens")))).toMatch(/^invalid_config: .*not valid JSON/);
    expect(code(() => TokenAuth.fromFile(file("empty.json", '{"tokens":[]}')))).toMatch(/^invalid_config: .*auth\.tokens/);
    expect(code(() => TokenAuth.fromFile(file("scope.json", '{"tokens":[{"token":"abc","scopes":["root"]}]}')))).toMatch(/^invalid_config: .*auth\.tokens\[0\]\.scopes\[0\]/);
    expect(code(() => TokenAuth.fromFile(file("noscope.json", '{"tokens":[{"token":"abc","scopes":[]}]}')))).toMatch(/scopes: must name at least one scope/);
    expect(code(() => TokenAuth.fromFile(file("space.json", '{"tokens":[{"token":"a b","scopes":["admin"]}]}')))).toMatch(/auth\.tokens\[0\]\.token/);
    expect(code(() => TokenAuth.fromFile(file("dup.json", '{"tokens":[{"token":"abc","scopes":["admin"]},{"token":"abc","scopes":["env:run"]}]}')))).toMatch(/tokens\[1\] repeats/);
    expect(code(() => TokenAuth.fromFile(file("shape.json", "[1]")))).toMatch(/^invalid_config/);
    expect(TokenAuth.fromFile(file("ok.json", JSON.stringify(TOKENS))).size).toBe(3);
  });

  it("parses bearer headers and knows loopback hosts", () => {
    expect(bearerToken("Bearer abc")).toBe("abc");
    expect(bearerToken("bearer   abc ")).toBe("abc");
    expect(bearerToken("Basic abc")).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
    for (const host of ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"]) expect(isLoopback(host), host).toBe(true);
    for (const host of ["0.0.0.0", "::", "10.0.0.1", "192.168.1.1", "example.com"]) expect(isLoopback(host), host).toBe(false);
  });
});

describe("scopes over HTTP", () => {
  it("401 without or with a wrong token; /healthz and /openapi.json are open", async () => {
    for (const headers of [{}, bearer("nope"), { authorization: "Basic run-token-0123456789" }, bearer("run-token-012345678")]) {
      const res = await api(server.base, "GET", "/v1/envs", undefined, headers);
      expect([res.status, res.body.error.code]).toEqual([401, "unauthorized"]);
    }
    expect((await api(server.base, "GET", "/healthz")).status).toBe(200);
    expect((await api(server.base, "GET", "/openapi.json")).status).toBe(200);
  });

  it("env:run drives sessions but reads no trajectories; trajectories:read reads but runs nothing; admin does all", async () => {
    const created = await api(server.base, "POST", "/v1/sessions", { ...TASK, record: true }, RUN);
    expect(created.status).toBe(201);
    const id = created.body.session_id as string;
    expect((await api(server.base, "POST", `/v1/sessions/${id}/step`, { action: { type: "message", content: "hi" } }, RUN)).status).toBe(200);
    const closed = await api(server.base, "DELETE", `/v1/sessions/${id}`, undefined, RUN);
    const episode = encodeURIComponent(closed.body.episode.episode_id);

    const forbidden = await api(server.base, "GET", `/v1/episodes/${episode}`, undefined, RUN);
    expect([forbidden.status, forbidden.body.error.code]).toEqual([403, "forbidden"]);
    expect(forbidden.body.error.details).toEqual({ needed: "trajectories:read", held: ["env:run"] });
    expect((await api(server.base, "GET", "/metrics", undefined, RUN)).status).toBe(403);

    expect((await api(server.base, "GET", `/v1/episodes/${episode}`, undefined, READ)).status).toBe(200);
    expect((await api(server.base, "POST", `/v1/episodes/${episode}/replay`, undefined, READ)).status).toBe(200);
    for (const [method, path] of [["GET", "/v1/envs"], ["POST", "/v1/sessions"], ["GET", `/v1/sessions/${id}`], ["GET", "/metrics"]]) {
      const res = await api(server.base, method as string, path as string, method === "POST" ? TASK : undefined, READ);
      expect([res.status, res.body.error?.code], path).toEqual([403, "forbidden"]);
    }

    expect((await api(server.base, "GET", `/v1/episodes/${episode}`, undefined, ADMIN)).status).toBe(200);
    expect((await api(server.base, "GET", "/v1/envs", undefined, ADMIN)).status).toBe(200);
    const metrics = await api(server.base, "GET", "/metrics", undefined, ADMIN);
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/llmix_errors_total\{code="forbidden"\} \d+/);
    expect(metrics.body).toMatch(/llmix_errors_total\{code="unauthorized"\} \d+/);
    expect(metrics.body).not.toContain("token-0123456789");
  });
});

describe("scopes over WebSocket", () => {
  const url = () => `ws://127.0.0.1:${server.port}/v1/ws`;

  it("the upgrade needs an env:run token, in the header or as ?token=", async () => {
    await expect(WsClient.connect(url())).rejects.toMatchObject({ status: 401 });
    await expect(WsClient.connect(`${url()}?token=wrong`)).rejects.toMatchObject({ status: 401 });
    await expect(WsClient.connect(url(), READ)).rejects.toMatchObject({ status: 403 });
    for (const client of [await WsClient.connect(url(), RUN), await WsClient.connect(`${url()}?token=run-token-0123456789`), await WsClient.connect(url(), ADMIN)]) {
      expect((await client.request("envs")).ok).toBe(true);
      await client.close();
    }
  });

  it("?token= counts only for the WebSocket upgrade, not for HTTP routes", async () => {
    const res = await api(server.base, "GET", "/v1/envs?token=run-token-0123456789");
    expect(res.status).toBe(401);
  });
});

describe("binding", () => {
  it("refuses a non-loopback host without --auth (invalid_config naming the reason)", async () => {
    const registry = builtinRegistry();
    await expect(startServer({ registry, host: "0.0.0.0", port: 0, storePath: join(dir, "a.db") })).rejects.toMatchObject({
      code: "invalid_config",
      message: expect.stringContaining("without --auth"),
    });
  });

  it("serves loopback without auth, and any host with it; a malformed --auth file stops the start", async () => {
    const registry = builtinRegistry();
    const open = await startServer({ registry, host: "127.0.0.1", port: 0, storePath: join(dir, "b.db") });
    expect(open.authenticated).toBe(false);
    expect((await api(open.url, "GET", "/v1/envs")).status).toBe(200);
    await open.stop();
    const authFile = join(dir, "tokens.json");
    writeFileSync(authFile, JSON.stringify(TOKENS));
    const locked = await startServer({ registry, host: "127.0.0.1", port: 0, storePath: join(dir, "c.db"), authPath: authFile });
    expect(locked.authenticated).toBe(true);
    expect((await api(locked.url, "GET", "/v1/envs")).status).toBe(401);
    await locked.stop();
    writeFileSync(join(dir, "broken.json"), '{"tokens": [{"token": 5}]}');
    await expect(startServer({ registry, host: "0.0.0.0", port: 0, storePath: join(dir, "d.db"), authPath: join(dir, "broken.json") })).rejects.toMatchObject({
      code: "invalid_config",
      message: expect.stringContaining("auth.tokens[0].token"),
    });
  });
});

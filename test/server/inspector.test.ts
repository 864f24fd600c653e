/**
 * The inspector's static files (src/server/inspector.ts): types, caching, the security headers, path
 * traversal in every spelling, the 404 and 503 answers, and that the files are open while the data
 * routes keep their auth. Raw requests (node:http) send each path exactly as written: fetch would
 * resolve "..".
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TokenAuth } from "../../src/server/auth.js";
import { INSPECTOR_CSP, inspectorFile, registerInspector } from "../../src/server/inspector.js";
import { startTestServer, type TestServer } from "./service-helpers.js";

/** GET a path as written, without normalisation. */
function rawGet(port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolveResponse, reject) => {
    const req = request({ host: "127.0.0.1", port, path, method: "GET", headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolveResponse({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", reject);
    req.end();
  });
}

const SECRET = "outside-the-inspector-secret";
let base: string;
let dir: string;
let server: TestServer;

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), "llmix-inspector-"));
  dir = join(base, "ui");
  mkdirSync(join(dir, "assets"), { recursive: true });
  writeFileSync(join(dir, "index.html"), "<!doctype html><title>inspector</title>");
  writeFileSync(join(dir, "assets", "index-abc123.js"), "console.log(1)");
  writeFileSync(join(dir, "assets", "index-abc123.css"), "body{}");
  writeFileSync(join(dir, "notes.unknownext"), "x");
  writeFileSync(join(base, "secret.txt"), SECRET);
  symlinkSync(join(base, "secret.txt"), join(dir, "link.txt"));
  server = await startTestServer({ withStore: false, extraRoutes: (app) => registerInspector(app, { dir }) });
});

afterAll(async () => {
  await server?.close();
  rmSync(base, { recursive: true, force: true });
});

describe("inspector files", () => {
  it("serves the page with a strict policy, nosniff and no-cache, and redirects /ui to /ui/", async () => {
    const page = await rawGet(server.port, "/ui/");
    expect(page.status).toBe(200);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.headers["cache-control"]).toBe("no-cache");
    expect(page.headers["content-security-policy"]).toBe(INSPECTOR_CSP);
    expect(INSPECTOR_CSP).toContain("script-src 'self'");
    expect(INSPECTOR_CSP).not.toContain("unsafe");
    expect(page.headers["x-content-type-options"]).toBe("nosniff");
    expect(page.body).toContain("<title>inspector</title>");
    expect((await rawGet(server.port, "/ui/index.html")).body).toBe(page.body);
    const bare = await rawGet(server.port, "/ui");
    expect(bare.status).toBe(302);
    expect(bare.headers.location).toBe("ui/");
  });

  it("serves hashed assets with their type, cached for good", async () => {
    const js = await rawGet(server.port, "/ui/assets/index-abc123.js");
    expect(js.status).toBe(200);
    expect(js.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(js.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    const css = await rawGet(server.port, "/ui/assets/index-abc123.css");
    expect(css.headers["content-type"]).toBe("text/css; charset=utf-8");
  });

  it("answers unknown files with the service's 404", async () => {
    for (const path of ["/ui/nope.js", "/ui/assets/", "/ui/assets", "/ui/notes.unknownext"]) {
      const res = await rawGet(server.port, path);
      expect(res.status, path).toBe(404);
      expect(JSON.parse(res.body).error.code, path).toBe("unknown_route");
    }
  });

  it("refuses every spelling of a path out of its directory", async () => {
    const attempts = [
      "/ui/../package.json",
      "/ui/..%2fpackage.json",
      "/ui/%2e%2e/package.json",
      "/ui/%2e%2e%2fsecret.txt",
      "/ui/%2E%2E%2Fsecret.txt",
      "/ui/assets/../../secret.txt",
      "/ui/assets/..%2f..%2fsecret.txt",
      "/ui/..%5csecret.txt",
      "/ui/assets%5c..%5c..%5csecret.txt",
      "/ui//etc/passwd",
      "/ui/%2fetc%2fpasswd",
      "/ui/index.html%00.js",
      "/ui/./index.html",
      "/ui/link.txt",
    ];
    for (const path of attempts) {
      const res = await rawGet(server.port, path);
      expect([400, 404], `${path} -> ${res.status}`).toContain(res.status);
      expect(res.body, path).not.toContain(SECRET);
      expect(res.body, path).not.toContain('"devDependencies"');
      expect(JSON.parse(res.body).error.code, path).toMatch(/^(invalid_argument|unknown_route)$/);
    }
  });

  it("checks paths itself, whatever the router decoded", () => {
    for (const bad of ["..", "../x", "a/../../x", "a\\..\\x", "/etc/passwd", "a//b", "./a", "a\0b"]) expect(() => inspectorFile(dir, bad), bad).toThrow(/refused/);
    expect(inspectorFile(dir, "")).toBe(join(dir, "index.html"));
    expect(inspectorFile(dir, "assets/x.js")).toBe(join(dir, "assets", "x.js"));
  });

  it("answers 503 naming npm run build when the front end is not built", async () => {
    const unbuilt = await startTestServer({ withStore: false, extraRoutes: (app) => registerInspector(app, { dir: join(base, "missing") }) });
    try {
      const res = await rawGet(unbuilt.port, "/ui/");
      expect(res.status).toBe(503);
      expect(JSON.parse(res.body).error.message).toContain("npm run build");
    } finally {
      await unbuilt.close();
    }
  });

  it("is open under auth while the data routes still need a token", async () => {
    const auth = TokenAuth.fromConfig({ tokens: [{ token: "reader-token", scopes: ["trajectories:read"] }] });
    const guarded = await startTestServer({ auth, extraRoutes: (app) => registerInspector(app, { dir }) });
    try {
      expect((await rawGet(guarded.port, "/ui/")).status).toBe(200);
      expect((await rawGet(guarded.port, "/ui/assets/index-abc123.js")).status).toBe(200);
      expect((await rawGet(guarded.port, "/v1/episodes/x")).status).toBe(401);
      expect((await rawGet(guarded.port, "/v1/episodes/x", { authorization: "Bearer reader-token" })).status).toBe(404);
    } finally {
      await guarded.close();
    }
  });
});

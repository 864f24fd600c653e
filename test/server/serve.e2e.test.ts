/**
 * End-to-end: `llmix serve` as a user runs it (the built dist/cli/bin.js; `npm test` builds it first).
 * It prints the API and OpenAPI URLs (with the real port for --port 0), serves a recorded episode, and on
 * SIGTERM finishes, stores the recorded sessions still open, closes the store and exits 0.
 */
import { spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import type { CreatedSession, StepResponse } from "../../src/server/sessions.js";
import { openStore } from "../../src/store/sqlite-store.js";
import { api, playReference, spawnServe, TASK, type ServeProcess } from "./service-helpers.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const bin = join(root, "dist/cli/bin.js");
const dir = mkdtempSync(join(tmpdir(), "llmix-serve-e2e-"));
const children: ChildProcess[] = [];

afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** Start `llmix serve` in the test's directory and wait for its one start line. */
function serve(args: string[]): Promise<ServeProcess> {
  return spawnServe(bin, dir, args, children);
}

describe("llmix serve", () => {
  it("is built, with the serve command registered and an npm start script", () => {
    expect(existsSync(bin), "run `npm run build` first (npm test does)").toBe(true);
    const help = spawnSync(process.execPath, [bin, "serve", "--help"], { encoding: "utf8" });
    expect(help.stdout, "register it in src/cli/main.ts: registerServeCommand(program)").toContain("--step-timeout");
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    expect(pkg.scripts.start).toBe("node dist/cli/bin.js serve");
  });

  it("serves on --port 0, and on SIGTERM stores open recorded sessions, closes the store and exits 0", async () => {
    const store = join(dir, "data", "llmix.db");
    // billing-dispute whose step sleeps on the message "sleep": a step still running when SIGTERM arrives.
    const slow = join(dir, "slow.mjs");
    writeFileSync(
      slow,
      `import { builtinRegistry } from ${JSON.stringify(pathToFileURL(join(root, "dist/index.js")).href)};
const billing = builtinRegistry().get("billing-dispute");
export default { id: "slow-billing", version: billing.version, description: "slow", create(options) {
  const env = billing.create(options);
  const step = env.step.bind(env);
  env.step = async (action) => { if (action && action.content === "sleep") await new Promise((r) => setTimeout(r, 1000)); return step(action); };
  return env;
} };
`,
    );
    const server = await serve(["--port", "0", "--store", store, "--idle-ttl", "600", "--step-timeout", "30", "--capacity", "50", "--body-limit", "65536", "--module", slow]);
    const { url } = server;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(url).not.toMatch(/:0$/);
    expect(server.line).toContain(`${url}/openapi.json`);
    expect((await api(url, "GET", "/openapi.json")).body.openapi).toBe("3.1.0");

    // One recorded episode played to the end (stored when it ends) and one left open (stored at shutdown).
    const done = (await api<CreatedSession>(url, "POST", "/v1/sessions", { ...TASK, record: true })).body;
    const run = await playReference(done, async (action) => (await api<StepResponse>(url, "POST", `/v1/sessions/${done.session_id}/step`, { action })).body);
    expect(run.at(-1)!.reward_components.task).toBe(1);
    const open = (await api<CreatedSession>(url, "POST", "/v1/sessions", { env: "slow-billing", task_id: "billing-dispute/medium/seed-4", seed: 4, record: true })).body;
    expect(open.env).toBe("slow-billing");
    expect((await api(url, "POST", `/v1/sessions/${open.session_id}/step`, { action: { type: "message", content: "Hello, how can I help?" } })).status).toBe(200);
    expect((await api(url, "POST", "/v1/sessions", "x".repeat(70_000))).status).toBe(413);

    // SIGTERM while a step is in flight: the step finishes and is answered, then the server exits 0.
    const inFlight = api<StepResponse>(url, "POST", `/v1/sessions/${open.session_id}/step`, { action: { type: "message", content: "sleep" } });
    await new Promise((r) => setTimeout(r, 300));
    server.child.kill("SIGTERM");
    const answered = await inFlight;
    expect(answered.status).toBe(200);
    expect(answered.body.observation.rendered.length).toBeGreaterThan(0);
    expect(await server.exited).toBe(0);
    expect(server.stderr()).toContain("unauthenticated");
    expect(server.stderr()).toContain("SIGTERM");

    const db = openStore(store);
    try {
      const finished = await db.getEpisode(done.session_id);
      expect(finished).toMatchObject({ outcome: 1, status: "ok", steps: run.length, env: "billing-dispute" });
      const interrupted = await db.getEpisode(open.session_id);
      expect(interrupted).toMatchObject({ env: "slow-billing", steps: 2, task_id: "billing-dispute/medium/seed-4", outcome: null });
      expect(await db.getSteps(open.session_id)).toHaveLength(2);
    } finally {
      await db.close();
    }
  });

  it("stops on SIGTERM even while a step never returns (its host is stopped after a grace), storing what was recorded", async () => {
    const store = join(dir, "hang", "llmix.db");
    const server = await serve(["--port", "0", "--store", store, "--step-timeout", "600", "--module", join(root, "test/fixtures/hostile-env.ts")]);
    const created = (await api<CreatedSession>(server.url, "POST", "/v1/sessions", { env: "hostile", task_id: "hostile/easy/seed-1", seed: 1, record: true })).body;
    const step = (tool: string) => api(server.url, "POST", `/v1/sessions/${created.session_id}/step`, { action: { type: "tool_call", tool, args: tool === "count" ? { by: 1 } : {} } });
    expect((await step("count")).status).toBe(200);
    const hung = step("hang").catch((error: unknown) => error);
    await new Promise((r) => setTimeout(r, 300));
    // It exits within this test's 60 s limit, long before the step's 600 s deadline: the stop's grace is seconds.
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    await hung;
    const db = openStore(store);
    try {
      expect(await db.getSteps(created.session_id)).toHaveLength(1);
      // A clean stop finishes the server's run.
      expect((await db.listRuns()).map((r) => r.status)).toEqual(["finished"]);
    } finally {
      await db.close();
    }
  }, 60_000);

  it("a killed server's run reads as interrupted, not running", async () => {
    const store = join(dir, "killed", "llmix.db");
    const server = await serve(["--port", "0", "--store", store]);
    const created = (await api<CreatedSession>(server.url, "POST", "/v1/sessions", { ...TASK, record: true })).body;
    await playReference(created, async (action) => (await api<StepResponse>(server.url, "POST", `/v1/sessions/${created.session_id}/step`, { action })).body);
    server.child.kill("SIGKILL");
    await server.exited;
    const db = openStore(store);
    try {
      const [run] = await db.listRuns();
      expect(run?.status).toBe("interrupted");
      expect(await db.getEpisode(created.session_id)).toMatchObject({ status: "ok", outcome: 1 });
    } finally {
      await db.close();
    }
  }, 60_000);

  it("refuses --host 0.0.0.0 without --auth (exit 2, invalid_config) and a malformed --auth file", () => {
    const open = spawnSync(process.execPath, [bin, "serve", "--host", "0.0.0.0", "--port", "0", "--store", join(dir, "x.db")], { cwd: dir, encoding: "utf8", timeout: 20_000 });
    expect(open.status).toBe(2);
    expect(open.stderr).toMatch(/invalid_config: .*without --auth/);
    const auth = spawnSync(process.execPath, [bin, "serve", "--port", "0", "--auth", join(dir, "missing.json")], { cwd: dir, encoding: "utf8", timeout: 20_000 });
    expect(auth.status).toBe(2);
    expect(auth.stderr).toMatch(/invalid_config: --auth .*missing\.json/);
    const flag = spawnSync(process.execPath, [bin, "serve", "--idle-ttl", "soon"], { cwd: dir, encoding: "utf8", timeout: 20_000 });
    expect(flag.status).toBe(2);
    expect(flag.stderr).toContain("--idle-ttl");
  });
});

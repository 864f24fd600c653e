/**
 * Nothing slips past (issue 20): `llmix serve --data-policy` with redaction on, driven over HTTP as a
 * user would — a recorded billing-dispute episode played by the reference solver (which types the
 * customer's email into a tool) plus an agent that types its own personal data, malformed requests
 * quoting it, a replay and an export. No personal value of the world or of the agent appears in the
 * process's log lines, /metrics, the stored episode, its replay report, the export or the store's file
 * bytes, while the live answers to the agent do carry the world's values (so the test is not vacuous).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { SensitiveValue } from "../../src/core/environment.js";
import { builtinRegistry } from "../../src/envs/index.js";
import { api, playReference, TASK } from "./service-helpers.js";

const BIN = join(process.cwd(), "dist/cli/bin.js");
const TOKENS = { acme: "acme-secret-2", ops: "ops-secret-2" } as const;
const auth = (token: string) => ({ authorization: `Bearer ${token}` });
// What the agent itself types: personal data the world never held.
const TYPED = { email: "leaky.agent@example.org", phone: "+1 415 555 0142", card: "4111 1111 1111 1111" };

describe("llmix serve --data-policy with redaction", () => {
  const children: ChildProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), "llmix-redact-serve-"));
  afterAll(() => {
    for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("keeps every personal value out of logs, metrics, stored steps, replay, export and the store file", async () => {
    const policyFile = join(dir, "policy.json");
    writeFileSync(policyFile, JSON.stringify({
      tenants: { acme: { tokens: [{ name: "acme-trainer", token: TOKENS.acme, scopes: ["env:run", "trajectories:read", "trajectories:export"] }] } },
      admins: [{ name: "ops", token: TOKENS.ops }],
      redaction: {},
    }));
    const store = join(dir, "llmix.db");
    const child = spawn(process.execPath, [BIN, "serve", "--data-policy", policyFile, "--store", store, "--port", "0", "--hosts", "1"], { stdio: ["ignore", "pipe", "pipe"] });
    children.push(child);
    let out = "";
    child.stdout!.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr!.on("data", (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    const base = await new Promise<string>((resolve, reject) => {
      const timer = setInterval(() => {
        const match = /API (http:\/\/[^\s]+)\/v1/.exec(out);
        if (match) (clearInterval(timer), resolve(match[1] as string));
      }, 50);
      void exited.then((code) => (clearInterval(timer), reject(new Error(`serve exited ${code}: ${out}`))));
    });
    expect(out).toContain("data policy");
    expect(out).toContain("redaction: on");

    // The world's personal values for this task, as the environment declares them.
    const env = builtinRegistry().get(TASK.env).create();
    await env.reset(TASK.task_id, TASK.seed);
    const world = (env.sensitiveValues() as SensitiveValue[]).map((v) => v.value).filter((v) => v.length >= 5);
    await env.close();
    expect(world.length).toBeGreaterThan(3);
    const secrets = [...new Set([...world, ...Object.values(TYPED)])];

    const created = await api(base, "POST", "/v1/sessions", { ...TASK, record: true }, auth(TOKENS.acme));
    expect(created.status).toBe(201);
    const sid = created.body.session_id as string;
    const live: string[] = [JSON.stringify(created.body)];
    // The agent types its own data first, in a message and in malformed calls.
    const said = await api(base, "POST", `/v1/sessions/${sid}/step`, { action: { type: "message", content: `Reach me at ${TYPED.email} or ${TYPED.phone}; card ${TYPED.card}.` } }, auth(TOKENS.acme));
    live.push(JSON.stringify(said.body));
    await api(base, "POST", `/v1/sessions/${sid}/step`, { action: { type: "tool_call", tool: "no_such_tool", args: { email: TYPED.email } } }, auth(TOKENS.acme));
    await api(base, "POST", `/v1/sessions/${sid}/step`, `{"action": {"type": "message", "content": "${TYPED.email}"`, { ...auth(TOKENS.acme), "content-type": "application/json" });
    await api(base, "POST", `/v1/sessions/${TYPED.email}/step`, { action: { type: "message", content: TYPED.phone } }, auth(TOKENS.acme));
    const info = await api(base, "GET", `/v1/sessions/${sid}`, undefined, auth(TOKENS.acme));
    const responses = await playReference(
      { ...created.body, observation: said.body.observation },
      async (action) => {
        const res = await api(base, "POST", `/v1/sessions/${sid}/step`, { action, expect_steps: undefined }, auth(TOKENS.acme));
        live.push(JSON.stringify(res.body));
        return res.body;
      },
    );
    expect(responses.at(-1)?.terminated || responses.at(-1)?.truncated).toBe(true);
    expect(info.status).toBe(200);
    // The live answers carry the world's values: the agent needs them.
    expect(world.some((v) => live.join("\n").includes(v))).toBe(true);
    const closed = await api(base, "DELETE", `/v1/sessions/${sid}`, undefined, auth(TOKENS.acme));
    expect(closed.status).toBe(200);
    const episodeId = closed.body.episode.episode_id as string;
    const runId = closed.body.episode.run_id as string;

    const stored = await api(base, "GET", `/v1/episodes/${encodeURIComponent(episodeId)}`, undefined, auth(TOKENS.acme));
    expect(stored.status).toBe(200);
    expect(JSON.stringify(stored.body)).toContain("[redacted:");
    const replay = await api(base, "POST", `/v1/episodes/${encodeURIComponent(episodeId)}/replay`, undefined, auth(TOKENS.acme));
    expect(replay.status).toBe(200);
    const exported = await fetch(`${base}/v1/runs/${encodeURIComponent(runId)}/export?format=jsonl`, { headers: auth(TOKENS.acme) });
    expect(exported.status).toBe(200);
    const exportText = await exported.text();
    expect(exportText.length).toBeGreaterThan(100);
    const metrics = await api(base, "GET", "/metrics", undefined, auth(TOKENS.ops));
    expect(metrics.status).toBe(200);
    const audit = await api(base, "GET", "/v1/audit?limit=1000", undefined, auth(TOKENS.ops));

    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    const files = [store, `${store}-wal`].filter(existsSync).map((p) => readFileSync(p).toString("latin1"));
    const places: Record<string, string> = {
      "log lines": out,
      "/metrics": String(metrics.body),
      "stored episode": JSON.stringify(stored.body),
      "replay report": JSON.stringify(replay.body),
      export: exportText,
      "audit log": JSON.stringify(audit.body),
      "store file": files.join("\n"),
    };
    for (const [place, text] of Object.entries(places)) {
      for (const secret of secrets) expect(text.includes(secret), `${place} holds "${secret}"`).toBe(false);
    }
  }, 120_000);
});

/**
 * billing-dispute with its communication scored by a rubric judge (issue 18): a rollout through the
 * CLI against a local OpenAI-compatible judge stores each verdict with its evidence, `llmix show`
 * prints it, and a replay and a reverify of the judged run make no model call (the verdicts are
 * cached). A judge that answers garbage scores the episode 0 with the error recorded, never a pass.
 * The service gives its sessions the judge with --env-options.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/sqlite-store.js";
import { runCli as cli } from "../helpers.js";
import { say, startOpenAIServer, type RecordedRequest } from "../fixtures/openai-server.js";
import { api, playReference, startTestServer } from "../server/service-helpers.js";

const dir = mkdtempSync(join(tmpdir(), "llmix-judged-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A judge that passes every criterion, quoting the start of the agent's last message as evidence. */
function fairJudge(request: RecordedRequest) {
  const schema = (request.body.response_format as { json_schema: { schema: { properties: { criteria: { items: { properties: { id: { enum: string[] } } } } } } } }).json_schema.schema;
  const ids = schema.properties.criteria.items.properties.id.enum;
  const user = request.body.messages?.find((m) => m.role === "user")?.content ?? "";
  const agent = user.split("\n").filter((line) => line.startsWith("Agent: ")).at(-1) ?? "";
  const evidence = agent.slice("Agent: ".length, "Agent: ".length + 30);
  return say(JSON.stringify({ criteria: ids.map((id) => ({ id, passed: true, evidence })) }));
}

describe("a rollout judged by a rubric judge", () => {
  it("stores verdicts with evidence, shows them, and replays and reverifies without a model call", async () => {
    const judge = await startOpenAIServer((request) => fairJudge(request));
    try {
      const store = join(dir, "llmix.db");
      const options = JSON.stringify({ communicationJudge: { baseURL: judge.url, model: "judge-1", cachePath: join(dir, "judge.db"), maxRetries: 0 } });
      const run = await cli("rollout", "--env", "billing-dispute", "--policy", "oracle", "-n", "3", "--difficulty", "easy", "--env-options", options, "--run-id", "judged", "--store", store, "--json");
      expect(run.status, run.stderr).toBe(0);
      const calls = judge.requests.length;
      expect(calls).toBe(3);
      const db = openStore(store);
      const episodes = await db.episodes({ run_id: "judged" });
      expect(episodes.every((e) => e.outcome === 1)).toBe(true);
      const verdict = episodes[0]!.verdict as { parts: { resolution: { details: { combine: string }; parts: { communication: { details: { verdict: { criteria: Array<{ evidence_found: boolean }> } } } } } } };
      expect(verdict.parts.resolution.details.combine).toBe("gate");
      expect(verdict.parts.resolution.parts.communication.details.verdict.criteria.every((c) => c.evidence_found)).toBe(true);
      await db.close();

      const show = await cli("show", "--episode", episodes[0]!.episode_id, "--store", store);
      expect(show.status, show.stderr).toBe(0);
      expect(show.stdout).toContain("evidence_found");
      const replay = await cli("replay", "--episode", episodes[0]!.episode_id, "--store", store);
      expect(replay.status, replay.stdout + replay.stderr).toBe(0);
      const reverify = await cli("reverify", "--run", "judged", "--store", store);
      expect(reverify.status, reverify.stdout + reverify.stderr).toBe(0);
      expect(judge.requests.length).toBe(calls);
    } finally {
      await judge.close();
    }
  }, 90_000);

  it("a judge answering garbage scores the episode 0 with the error recorded", async () => {
    const judge = await startOpenAIServer(() => say("Everything is great, full marks!"));
    try {
      const store = join(dir, "garbage.db");
      const options = JSON.stringify({ communicationJudge: { baseURL: judge.url, model: "judge-1", cachePath: join(dir, "garbage-judge.db"), maxRetries: 0 } });
      const run = await cli("rollout", "--env", "billing-dispute", "--policy", "oracle", "-n", "1", "--difficulty", "easy", "--env-options", options, "--run-id", "garbage", "--store", store, "--json");
      expect(run.status, run.stderr).toBe(0);
      const db = openStore(store);
      const [episode] = await db.episodes({ run_id: "garbage" });
      expect(episode?.outcome).toBe(0);
      expect(JSON.stringify(episode?.verdict)).toContain("answered malformed output (not JSON");
      await db.close();
    } finally {
      await judge.close();
    }
  }, 60_000);
});

describe("a service session judged by a rubric judge", () => {
  it("llmix serve --env-options gives its sessions the judge; the recorded episode carries the verdict", async () => {
    const judge = await startOpenAIServer((request) => fairJudge(request));
    const server = await startTestServer({ envOptions: { "billing-dispute": { communicationJudge: { baseURL: judge.url, model: "judge-1", cachePath: join(dir, "service-judge.db"), maxRetries: 0 } } } });
    try {
      const created = await api(server.base, "POST", "/v1/sessions", { env: "billing-dispute", task_id: "billing-dispute/easy/seed-3", seed: 3, record: true });
      expect(created.status).toBe(201);
      const answers = await playReference(created.body, async (action) => (await api(server.base, "POST", `/v1/sessions/${created.body.session_id}/step`, { action })).body);
      const last = answers.at(-1)!;
      expect(last.reward_components.task).toBe(1);
      const verdict = JSON.stringify(last.info.verdict);
      expect(verdict).toContain('"combine":"gate"');
      expect(verdict).toContain("evidence_found");
      expect(judge.requests.length).toBe(1);
      const run = (await server.store!.listRuns())[0]!;
      expect((run.config as { env_options: { communicationJudge: { model: string } } }).env_options.communicationJudge.model).toBe("judge-1");
    } finally {
      await server.close();
      await judge.close();
    }
  }, 60_000);
});

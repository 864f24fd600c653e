import { describe, expect, it } from "vitest";
import type { TrajectoryStepRecord } from "../../core/contract.js";
import type { StoredEpisode } from "../../store/types.js";
import { defaultFeatureConfig, featurize, hashToken, renderTrajectory, trajectoryPieces, type FeatureConfig, type SparseVector } from "./features.js";
import { syntheticEpisodes } from "./test-support.js";

/** FNV-1a 32 over Node's own UTF-8 encoding, then fmix32: the reference the hand-written hash must match. */
function referenceHash(token: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(token, "utf8")) h = Math.imul(h ^ byte, 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function asPlain(v: SparseVector): { indices: number[]; values: number[] } {
  return { indices: [...v.indices], values: [...v.values] };
}

/** The same episode with every reward, verdict and outcome field changed (and the verdict flipped). */
function relabelled(stored: StoredEpisode): StoredEpisode {
  const copy = structuredClone(stored);
  copy.steps = copy.steps.map((s, i) => ({
    ...s,
    reward: 123 + i,
    reward_components: { task: 1 - (s.reward_components.task ?? 0), invalid_call: -5, policy_violation: -1 },
    info: { verdict: { passed: true, score: 1, details: { why: "flipped" } }, end_reason: "solved", outcome: 1, verifier_error: "none" },
    terminated: !s.terminated,
    truncated: !s.truncated,
    policy: { prompt_token_ids: [1, 2, 3], completion_token_ids: [4], logprobs: [-0.5], model: "other" },
  }));
  copy.episode = {
    ...copy.episode,
    outcome: copy.episode.outcome === 1 ? 0 : 1,
    total_reward: -42,
    verdict: { passed: copy.episode.outcome !== 1, score: 0.123 },
    reward_components: { task: 0.5 },
    end_reason: "max_steps",
    advantages: { grpo: 3, dr_grpo: 2, rloo: 1 },
  };
  return copy;
}

/** Wraps a record so reading any key outside `allowed` fails the test. */
function guarded<T extends object>(value: T, allowed: readonly string[], path: string): T {
  return new Proxy(value, {
    get(target, key, receiver) {
      if (typeof key === "string" && !allowed.includes(key)) throw new Error(`featurizer read ${path}.${key}`);
      return Reflect.get(target, key, receiver) as unknown;
    },
    ownKeys() {
      throw new Error(`featurizer enumerated ${path}`);
    },
  });
}

describe("reward-model features", () => {
  it("are identical for episodes that differ only in reward, verdict and outcome fields", () => {
    for (const stored of syntheticEpisodes("leak", 20)) {
      const other = relabelled(stored);
      expect(asPlain(featurize(other.steps))).toEqual(asPlain(featurize(stored.steps)));
      expect(renderTrajectory(other.steps)).toBe(renderTrajectory(stored.steps));
    }
  });

  it("read exactly the documented step fields: observation.rendered, action, tool_result status/error/partial", () => {
    const [stored] = syntheticEpisodes("guard", 1);
    const steps = stored!.steps.map((s, i) =>
      guarded(
        {
          ...s,
          observation: guarded(s.observation, ["rendered"], `steps[${i}].observation`),
          tool_result: s.tool_result === null ? null : guarded(s.tool_result, ["status", "error", "partial"], `steps[${i}].tool_result`),
        },
        ["observation", "action", "tool_result"],
        `steps[${i}]`,
      ),
    );
    // The guard itself works: reading a reward field fails.
    expect(() => steps[0]!.reward).toThrow(/steps\[0\]\.reward/);
    expect(() => steps[1]!.tool_result!.output).toThrow(/tool_result\.output/);
    expect(() => featurize(steps)).not.toThrow();
    expect(() => renderTrajectory(steps)).not.toThrow();
  });

  it("hash tokens as FNV-1a over UTF-8 then fmix32, surrogates included", () => {
    for (const token of ["", "a", "o:refund", "m:café", "a:日本語", "emoji 😀 ok", "lone \ud800 high", "lone \udc00 low", "end \ud83d"]) {
      expect(hashToken(token), token).toBe(referenceHash(token));
    }
    // Pinned: a change here moves every feature of every saved model to another bucket.
    expect(hashToken("call:verify_identity")).toBe(referenceHash("call:verify_identity"));
    expect([hashToken(""), hashToken("o:refund")]).toMatchInlineSnapshot(`
      [
        2872998923,
        2085699877,
      ]
    `);
  });

  it("hash exactly the tokens the module comment names: namespaced unigrams, bigrams, tool tokens", () => {
    const config: FeatureConfig = { ...defaultFeatureConfig(), dense: [] };
    const step = (action: TrajectoryStepRecord["action"], rendered: string, status?: "ok" | "error"): TrajectoryStepRecord => ({
      episode_id: "e",
      task_id: "t",
      env_version: "1",
      policy_checkpoint: null,
      step: 1,
      observation: { rendered, tokens: 1 },
      action,
      tool_result: status ? { status, latency_ms: 1, cost: 0, output: null, error: status === "error" ? { code: "upstream_5xx", message: "x" } : undefined } : null,
      reward_components: {},
      terminated: false,
      truncated: false,
    });
    const steps = [
      step({ type: "message", content: "Refund 42 for INV_77, Café!" }, "Hi"),
      step({ type: "tool_call", tool: "refund", args: { charge_id: "ch_9", note: null } }, "", "error"),
    ];
    const tokens = [
      "o:hi",
      "seq:^>message",
      "m:refund", "m:00", "m:for", "m:inv_00", "m:café",
      "m:refund 00", "m:00 for", "m:for inv_00", "m:inv_00 café",
      "seq:message>refund", "call:refund", "call:refund.charge_id", "a:ch_0",
      "res:refund:error", "res:refund:error:upstream_5xx",
    ];
    const expected = new Map<number, number>();
    for (const t of tokens) {
      const h = referenceHash(t);
      const bucket = h & (config.buckets - 1);
      expected.set(bucket, (expected.get(bucket) ?? 0) + (h & 0x80000000 ? -1 : 1));
    }
    const norm = Math.sqrt([...expected.values()].reduce((a, v) => a + v * v, 0));
    const got = featurize(steps, config);
    expect([...got.indices]).toEqual([...expected.keys()].sort((a, b) => a - b));
    got.indices.forEach((index, i) => expect(got.values[i]).toBeCloseTo(expected.get(index)! / norm, 12));
  });

  it("count repeats sublinearly and normalise the hashed part to unit length", () => {
    const [stored] = syntheticEpisodes("norm", 1);
    const config: FeatureConfig = { ...defaultFeatureConfig(), dense: [] };
    const v = featurize(stored!.steps, config);
    expect(Math.hypot(...v.values)).toBeCloseTo(1, 12);
    expect([...v.indices]).toEqual([...v.indices].sort((a, b) => a - b));
    expect(new Set(v.indices).size).toBe(v.indices.length);
  });

  it("add the dense features after the buckets", () => {
    const [stored] = syntheticEpisodes("dense", 1);
    const base = stored!.steps[0]!;
    const steps: TrajectoryStepRecord[] = [
      { ...base, action: { type: "invalid", raw: "garbage" }, tool_result: null },
      { ...base, action: { type: "tool_call", tool: "x", args: {} }, tool_result: { status: "invalid", latency_ms: 0, cost: 0, output: null } },
      { ...base, action: { type: "tool_call", tool: "x", args: {} }, tool_result: { status: "timeout", latency_ms: 0, cost: 0, output: null } },
      { ...base, action: { type: "message", content: "done" }, tool_result: null },
    ];
    const config = defaultFeatureConfig();
    const v = featurize(steps, config);
    const dense = Object.fromEntries(config.dense.map((name, k) => [name, v.values[v.indices.indexOf(config.buckets + k)]]));
    expect(dense).toEqual({
      log_steps: Math.log1p(4) / 5,
      invalid_fraction: 2 / 4,
      tool_failure_fraction: 1 / 2,
      message_fraction: 1 / 4,
    });
    // An invalid action contributes that it was invalid, never its raw payload.
    expect(trajectoryPieces(steps)[1]).toEqual({ kind: "invalid_action" });
    expect(renderTrajectory(steps)).not.toContain("garbage");
  });

  it("cut each text at max_chars_per_text", () => {
    const [stored] = syntheticEpisodes("cut", 1);
    const base = stored!.steps[0]!;
    const long = { ...base, observation: { rendered: `alpha ${"beta ".repeat(100)}omega`, tokens: 1 } };
    const short = { ...base, observation: { rendered: `alpha ${"beta ".repeat(100)}`, tokens: 1 } };
    const config: FeatureConfig = { ...defaultFeatureConfig(), max_chars_per_text: 200 };
    expect(asPlain(featurize([long], config))).toEqual(asPlain(featurize([short], config)));
    expect(asPlain(featurize([long]))).not.toEqual(asPlain(featurize([short])));
  });
});

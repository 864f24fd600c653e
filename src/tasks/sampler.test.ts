import { describe, expect, it } from "vitest";
import { LlmixError } from "../core/errors.js";
import { Rng } from "../core/rng.js";
import { dropFlatGroups, restoreSampler, TaskSampler, type SamplerSpec } from "./sampler.js";
import { splitOf } from "./splits.js";

const count = (ids: readonly string[]) => {
  const out: Record<string, number> = {};
  for (const id of ids) {
    const cell = id.split("/").slice(0, 2).join("/");
    out[cell] = (out[cell] ?? 0) + 1;
  }
  return out;
};

describe("TaskSampler: mixes", () => {
  it("draws cells by weight, ids of its split only, the same ids for the same seed", () => {
    const sampler = new TaskSampler({ spec: { kind: "mix", weights: { easy: 1, hard: 3 } }, family: "toy", seed: 4 });
    const ids = sampler.next(4000);
    const counts = count(ids);
    expect(Object.keys(counts).sort()).toEqual(["toy/easy", "toy/hard"]);
    expect((counts["toy/hard"] as number) / 4000).toBeCloseTo(0.75, 1);
    expect(ids.every((id) => splitOf(id) === "train")).toBe(true);
    expect(new TaskSampler({ spec: { kind: "mix", weights: { easy: 1, hard: 3 } }, family: "toy", seed: 4 }).next(4000)).toEqual(ids);
    expect(new TaskSampler({ spec: { kind: "mix", weights: { easy: 1, hard: 3 } }, family: "toy", seed: 5 }).next(50)).not.toEqual(ids.slice(0, 50));
    const evalIds = new TaskSampler({ spec: { kind: "mix", weights: { "other/medium": 1 } }, family: "toy", split: "eval" }).next(100);
    expect(evalIds.every((id) => id.startsWith("other/medium/") && splitOf(id) === "eval")).toBe(true);
  });

  it("a restored state continues with exactly the ids an uninterrupted sampler draws", () => {
    const spec: SamplerSpec = { kind: "curriculum", cells: ["easy", "medium", "hard"] };
    const a = new TaskSampler({ spec, family: "toy", seed: 9 });
    const b = new TaskSampler({ spec, family: "toy", seed: 9 });
    const feed = (s: TaskSampler, ids: string[]) => s.observe(ids.map((task_id, i) => ({ task_id, outcome: task_id.includes("easy") ? 1 : i % 2 })));
    for (let step = 0; step < 5; step++) {
      feed(a, a.next(16, step));
      feed(b, b.next(16, step));
    }
    // Through JSON, as a run's stored state would go.
    const resumed = restoreSampler(JSON.parse(JSON.stringify(b.state())));
    for (let step = 5; step < 10; step++) {
      const expected = a.next(16, step);
      expect(resumed.next(16, step)).toEqual(expected);
      feed(a, expected);
      feed(resumed, expected);
    }
    expect(resumed.state()).toEqual(a.state());
  });
});

describe("TaskSampler: schedules", () => {
  const spec: SamplerSpec = { kind: "schedule", stages: [{ at_step: 0, weights: { easy: 1 } }, { at_step: 100, weights: { hard: 1 } }] };

  it("ramps linearly between stages and holds the last one", () => {
    const sampler = new TaskSampler({ spec, family: "toy" });
    expect(sampler.weights(0)).toEqual({ "toy/easy": 1, "toy/hard": 0 });
    expect(sampler.weights(50)).toEqual({ "toy/easy": 0.5, "toy/hard": 0.5 });
    expect(sampler.weights(100)).toEqual({ "toy/easy": 0, "toy/hard": 1 });
    expect(sampler.weights(5000)).toEqual({ "toy/easy": 0, "toy/hard": 1 });
    expect(count(sampler.next(200, 0))).toEqual({ "toy/easy": 200 });
  });

  it("steps instead with ramp: step", () => {
    const sampler = new TaskSampler({ spec: { ...spec, ramp: "step" }, family: "toy" });
    expect(sampler.weights(99)).toEqual({ "toy/easy": 1, "toy/hard": 0 });
    expect(sampler.weights(100)).toEqual({ "toy/easy": 0, "toy/hard": 1 });
  });
});

/**
 * A scripted learner: three cells of rising difficulty, each with a skill that grows from practice in
 * proportion to p(1 - p) (a GRPO group learns only where outcomes vary: nothing from a cell it always
 * fails or always passes), and harder cells start higher the more the easier ones are mastered.
 */
function train(spec: SamplerSpec, seed: number): { episodes: number; sampledPassRate: number } {
  const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));
  const skill = { easy: 0, medium: 0, hard: 0 };
  const pass = () => ({ easy: sigmoid(skill.easy - 1), medium: sigmoid(skill.medium + 0.5 * skill.easy - 4), hard: sigmoid(skill.hard + 0.5 * skill.medium - 7) });
  const sampler = new TaskSampler({ spec, family: "toy", seed });
  const rng = Rng.fromKey("learner", seed);
  let episodes = 0;
  let passed = 0;
  let counted = 0;
  for (let step = 0; step < 5000; step++) {
    const p = pass();
    if (p.easy >= 0.8 && p.medium >= 0.8 && p.hard >= 0.8) return { episodes, sampledPassRate: passed / counted };
    const results = sampler.next(16, step).map((task_id) => {
      const cell = task_id.split("/")[1] as keyof typeof skill;
      const outcome = rng.float() < p[cell] ? 1 : 0;
      skill[cell] += 0.2 * p[cell] * (1 - p[cell]);
      if (step >= 20) {
        passed += outcome;
        counted++;
      }
      return { task_id, outcome };
    });
    sampler.observe(results);
    episodes += results.length;
  }
  return { episodes: Number.POSITIVE_INFINITY, sampledPassRate: passed / counted };
}

describe("TaskSampler: the adaptive curriculum", () => {
  it("brings a scripted learner to 0.8 on every cell in fewer episodes than the uniform mix, sampling inside its band", () => {
    for (const seed of [1, 2, 3]) {
      const uniform = train({ kind: "mix", weights: { easy: 1, medium: 1, hard: 1 } }, seed);
      const curriculum = train({ kind: "curriculum", cells: ["easy", "medium", "hard"] }, seed);
      // Seen here: uniform 1872 / 1712 / 1744 episodes, curriculum 1584 / 1552 / 1552.
      expect(curriculum.episodes, `seed ${seed}: curriculum ${curriculum.episodes}, uniform ${uniform.episodes}`).toBeLessThan(uniform.episodes);
      expect(curriculum.sampledPassRate).toBeGreaterThanOrEqual(0.2);
      expect(curriculum.sampledPassRate).toBeLessThanOrEqual(0.8);
    }
  });

  it("weighs cells outside the band low but never to zero, and tries cells without results", () => {
    const sampler = new TaskSampler({ spec: { kind: "curriculum", cells: ["easy", "medium", "hard"], explore: 0.1 }, family: "toy" });
    expect(sampler.weights()).toEqual({ "toy/easy": 1 / 3, "toy/medium": 1 / 3, "toy/hard": 1 / 3 });
    sampler.observe(Array.from({ length: 8 }, (_, i) => ({ task_id: `toy/easy/seed-${i}`, outcome: 1 })));
    sampler.observe(Array.from({ length: 8 }, (_, i) => ({ task_id: `toy/medium/seed-${i}`, outcome: i % 2 })));
    sampler.observe(Array.from({ length: 8 }, (_, i) => ({ task_id: `toy/hard/seed-${i}`, outcome: 0 })));
    expect(sampler.passRates()).toEqual({ "toy/easy": 1, "toy/medium": 0.5, "toy/hard": 0 });
    const w = sampler.weights();
    expect(w["toy/medium"]).toBeGreaterThan(0.8);
    expect(w["toy/easy"]).toBeGreaterThan(0.03);
    expect(w["toy/hard"]).toBeCloseTo(w["toy/easy"] as number, 12);
    // Results of cells it does not balance are ignored; bad outcomes are refused.
    sampler.observe([{ task_id: "other/easy/seed-1", outcome: 1 }]);
    expect(() => sampler.observe([{ task_id: "toy/easy/seed-1", outcome: 2 }])).toThrow(/outcome of toy\/easy\/seed-1 must be a number in \[0, 1\]/);
  });
});

describe("dropFlatGroups (dynamic sampling)", () => {
  it("drops groups whose rewards are all equal and counts them by pass rate", () => {
    const groups = [
      { rewards: [1, 1, 1, 1], outcomes: [1, 1, 1, 1] },
      { rewards: [0.2, 0.2], outcomes: [0, 0] },
      { rewards: [1, 0, 1, 0], outcomes: [1, 0, 1, 0] },
      { rewards: [-0.1, -0.1], outcomes: [0, 0] },
    ];
    const report = dropFlatGroups(groups, (g) => g.rewards, (g) => g.outcomes);
    expect(report.kept).toEqual([groups[2]]);
    expect(report.dropped).toHaveLength(3);
    expect(report.dropped_by_pass_rate).toEqual({ "1": 1, "0": 2 });
  });
});

describe("TaskSampler: bad specs", () => {
  it.each([
    [{ kind: "mix", weights: {} }, /weights names no cell/],
    [{ kind: "mix", weights: { easy: -1 } }, /weights\.easy must be a finite number >= 0/],
    [{ kind: "mix", weights: { easy: 0 } }, /every weight is 0/],
    [{ kind: "mix", weights: { "Bad Cell": 1 } }, /"Bad Cell" is not a cell/],
    [{ kind: "schedule", stages: [] }, /needs stages/],
    [{ kind: "schedule", stages: [{ at_step: 5, weights: { easy: 1 } }, { at_step: 5, weights: { hard: 1 } }] }, /stages\[1\]\.at_step must be after/],
    [{ kind: "curriculum", cells: [] }, /needs cells/],
    [{ kind: "curriculum", cells: ["easy"], band: [0.9, 0.1] }, /band must be \[low, high\]/],
    [{ kind: "curriculum", cells: ["easy"], window: 0 }, /window must be an integer/],
    [{ kind: "bandit" }, /unknown kind "bandit"/],
  ])("%j is refused", (spec, message) => {
    expect(() => new TaskSampler({ spec: spec as SamplerSpec, family: "toy" })).toThrow(message);
    try {
      new TaskSampler({ spec: spec as SamplerSpec, family: "toy" });
    } catch (error) {
      expect((error as LlmixError).code).toBe("invalid_argument");
    }
  });

  it("refuses a bad n, step or state", () => {
    const sampler = new TaskSampler({ spec: { kind: "mix", weights: { easy: 1 } }, family: "toy" });
    expect(() => sampler.next(-1)).toThrow(/n must be an integer >= 0/);
    expect(() => sampler.next(1, 1.5)).toThrow(/step must be an integer >= 0/);
    expect(() => restoreSampler({} as never)).toThrow(/what TaskSampler.state\(\) returned/);
    // A client's spec cannot make every draw weigh an unbounded number of cells.
    const cells = Array.from({ length: 1001 }, (_, i) => `f${i}/easy`);
    expect(() => new TaskSampler({ spec: { kind: "curriculum", cells }, family: "toy" })).toThrow(/1001 cells; at most 1000/);
    const good = sampler.state();
    expect(() => restoreSampler({ ...good, rng: { key: "k", s: [0, 0, 0, 0] } })).toThrow(/state\.rng: RNG state must not be all zero/);
    expect(() => restoreSampler({ ...good, drawn: -1 })).toThrow(/state\.drawn must be an integer >= 0/);
    expect(() => restoreSampler({ ...good, results: { "toy/hard": [1] } })).toThrow(/not a cell of this sampler/);
    expect(() => restoreSampler({ ...good, results: { "toy/easy": [1, "x"] } as never })).toThrow(/outcomes in \[0, 1\]/);
    expect(() => restoreSampler({ ...good, config: { ...good.config, spec: { kind: "mix", weights: { easy: -2 } } } })).toThrow(/weights\.easy must be a finite number/);
  });
});

describe("TaskSampler: knobs and named sets", () => {
  // A toy feature: odd ids carry the knob.
  const features = (id: string) => ({ variant: Number(id.split("seed-")[1]) % 2 === 1 ? "injection" : "none" });
  const share = (ids: string[]) => ids.filter((id) => features(id).variant === "injection").length / ids.length;

  it("weighs tasks within a cell by their knobs, deterministically, and 0 excludes them", () => {
    const spec = { kind: "mix", weights: { hard: 1 }, knobs: { "variant=injection": 4 } } as const;
    // With knobs a call draws at most 1000: two calls continue one stream.
    const draw2000 = (sampler: TaskSampler) => [...sampler.next(1000), ...sampler.next(1000)];
    const ids = draw2000(new TaskSampler({ spec, family: "toy", seed: 2 }, undefined, { features }));
    expect(share(new TaskSampler({ spec: { kind: "mix", weights: { hard: 1 } }, family: "toy", seed: 2 }).next(2000))).toBeCloseTo(0.5, 1);
    expect(share(ids)).toBeCloseTo(0.8, 1);
    expect(draw2000(new TaskSampler({ spec, family: "toy", seed: 2 }, undefined, { features }))).toEqual(ids);
    const never = new TaskSampler({ spec: { ...spec, knobs: { "variant=injection": 0 } }, family: "toy" }, undefined, { features }).next(200);
    expect(share(never)).toBe(0);
    // A restored sampler with the same runtime continues identically.
    const a = new TaskSampler({ spec, family: "toy", seed: 3 }, undefined, { features });
    a.next(10);
    const b = restoreSampler(JSON.parse(JSON.stringify(a.state())), { features });
    expect(b.next(50)).toEqual(a.next(50));
  });

  it("refuses knobs without features, a malformed knob, or a knob naming no feature", () => {
    expect(() => new TaskSampler({ spec: { kind: "mix", weights: { hard: 1 }, knobs: { "variant=injection": 2 } }, family: "toy" })).toThrow(/knobs need the environment's task features/);
    expect(() => new TaskSampler({ spec: { kind: "mix", weights: { hard: 1 }, knobs: { variant: 2 } }, family: "toy" }, undefined, { features })).toThrow(/FEATURE=VALUE/);
    expect(() => new TaskSampler({ spec: { kind: "mix", weights: { hard: 1 }, knobs: { "variant=x": -1 } }, family: "toy" }, undefined, { features })).toThrow(/knobs.variant=x/);
    const sampler = new TaskSampler({ spec: { kind: "mix", weights: { hard: 1 }, knobs: { "colour=blue": 2 } }, family: "toy" }, undefined, { features });
    expect(() => sampler.next(1)).toThrow(/"colour" is not a feature/);
  });

  it("draws a named set's ids for its cell, and refuses a set it was not given or ids of another family", () => {
    const sets = { negatives: ["toy/hard/seed-7", "toy/hard/seed-9"] };
    const sampler = new TaskSampler({ spec: { kind: "mix", weights: { easy: 1, "set:negatives": 1 } }, family: "toy", seed: 1, sets });
    const ids = sampler.next(400);
    const fromSet = ids.filter((id) => sets.negatives.includes(id)).length;
    expect(fromSet / ids.length).toBeCloseTo(0.5, 1);
    expect(ids.filter((id) => !sets.negatives.includes(id)).every((id) => id.startsWith("toy/easy/"))).toBe(true);
    expect(() => new TaskSampler({ spec: { kind: "mix", weights: { "set:other": 1 } }, family: "toy", sets })).toThrow(/names no task set/);
    expect(() => new TaskSampler({ spec: { kind: "mix", weights: { "set:x": 1 } }, family: "toy", sets: { x: ["other/hard/seed-1"] } })).toThrow(/not a task id of toy/);
  });
});

describe("TaskSampler: knobs that accept nothing", () => {
  it("gives up after MAX_KNOB_TRIES candidates instead of searching for seconds, and bounds n", () => {
    let generated = 0;
    const features = (id: string) => {
      generated++;
      return { variant: id.length > 0 ? "none" : "x" };
    };
    const sampler = new TaskSampler({ spec: { kind: "mix", weights: { hard: 1 }, knobs: { "variant=none": 0 } }, family: "toy" }, undefined, { features });
    expect(() => sampler.next(1)).toThrow(/knobs accepted none of 256/);
    expect(generated).toBe(256);
    const ok = new TaskSampler({ spec: { kind: "mix", weights: { hard: 1 }, knobs: { "variant=none": 2 } }, family: "toy" }, undefined, { features });
    expect(() => ok.next(1001)).toThrow(/at most 1000 tasks per call/);
    expect(ok.next(1000)).toHaveLength(1000);
  });
});

import pngjs from "pngjs";
import { describe, expect, it } from "vitest";
import { LlmixError, ValidationError } from "../core/errors.js";
import { auroc, calibrationReport, spearman, type CalibrationItem } from "./calibration.js";
import { PNG_COLOURS, PNG_LAYOUT, reliabilityDiagramPng, reliabilityDiagramText } from "./reliability-diagram.js";

const { PNG } = pngjs;

/** Items from [score, outcome] pairs; ids i0, i1, … and length 1 unless given. */
function items(pairs: Array<[number, number]>, extra: Partial<CalibrationItem> = {}): CalibrationItem[] {
  return pairs.map(([score, outcome], k) => ({ id: `i${k}`, score, outcome, length: 1, ...extra }));
}

const repeat = (n: number, pair: [number, number]): Array<[number, number]> => Array.from({ length: n }, () => pair);

// Bin 1: four at 0.15 with one success (rate 0.25, gap 0.10); bin 8: six at 0.85 with three (rate 0.5, gap 0.35).
const MISCALIBRATED = items([...repeat(1, [0.15, 1]), ...repeat(3, [0.15, 0]), ...repeat(3, [0.85, 1]), ...repeat(3, [0.85, 0])]);

function thrown(fn: () => unknown): LlmixError {
  try {
    fn();
  } catch (error) {
    if (error instanceof LlmixError) return error;
    throw error;
  }
  throw new Error("expected a throw");
}

describe("auroc", () => {
  it("is 1 for a perfectly separating score, 0 reversed, 0.5 for constant scores", () => {
    expect(auroc([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1])).toBe(1);
    expect(auroc([0.9, 0.8, 0.2, 0.1], [0, 0, 1, 1])).toBe(0);
    expect(auroc([0.5, 0.5, 0.5, 0.5], [0, 1, 0, 1])).toBe(0.5);
  });

  it("counts ties half (hand-computed on 6 items)", () => {
    // Positives 0.9, 0.7, 0.5 vs negatives 0.7, 0.5, 0.3: 3 + 2.5 + 1.5 = 7 of 9 pairs.
    expect(auroc([0.9, 0.7, 0.5, 0.7, 0.5, 0.3], [1, 1, 1, 0, 0, 0])).toBeCloseTo(7 / 9, 12);
  });

  it("is null when one class is empty", () => {
    expect(auroc([0.1, 0.9], [1, 1])).toBeNull();
    expect(auroc([0.1, 0.9], [0, 0])).toBeNull();
  });
});

describe("spearman", () => {
  it("uses average ranks for ties (hand-computed)", () => {
    // Ranks x = [1, 2.5, 2.5, 4], y = [1, 3, 2, 4]: cov 4.5, var 4.5 and 5, so rho = sqrt(0.9).
    expect(spearman([1, 2, 2, 3], [1, 3, 2, 4])).toBeCloseTo(Math.sqrt(0.9), 12);
  });

  it("is ±1 for monotone data and null when undefined", () => {
    expect(spearman([1, 2, 3], [10, 200, 3000])).toBe(1);
    expect(spearman([1, 2, 3], [3, 2, 1])).toBe(-1);
    expect(spearman([1, 2, 3], [5, 5, 5])).toBeNull();
    expect(spearman([1], [1])).toBeNull();
  });
});

describe("calibrationReport", () => {
  it("reports AUROC and Spearman of score vs the raw outcome", () => {
    const r = calibrationReport(items([[0.1, 0], [0.2, 0.5], [0.2, 0.25], [0.3, 1]]));
    expect(r.n).toBe(4);
    expect(r.positives).toBe(1);
    expect(r.spearman).toBeCloseTo(Math.sqrt(0.9), 12);
    expect(r.auroc).toBe(1);
  });

  it("gives null AUROC and Spearman when every item succeeds", () => {
    const r = calibrationReport(items([[0.2, 1], [0.9, 1]]));
    expect(r.auroc).toBeNull();
    expect(r.spearman).toBeNull();
  });

  it("gives ECE 0 when scores equal the per-bin success rates", () => {
    const r = calibrationReport(
      items([...repeat(1, [0.25, 1]), ...repeat(3, [0.25, 0]), [0.5, 1], [0.5, 0], ...repeat(3, [0.75, 1]), [0.75, 0]]),
    );
    expect(r.ece).toBeCloseTo(0, 12);
    expect(r.bins).toHaveLength(10);
    expect(r.bins[2]).toEqual({ lo: 0.2, hi: 0.3, count: 4, mean_score: 0.25, success_rate: 0.25 });
    expect(r.bins[5]).toMatchObject({ count: 2, mean_score: 0.5, success_rate: 0.5 });
    expect(r.bins[0]).toEqual({ lo: 0, hi: 0.1, count: 0, mean_score: null, success_rate: null });
  });

  it("gives the hand-computed ECE and Brier for a miscalibrated set", () => {
    const r = calibrationReport(MISCALIBRATED);
    // 0.4 * |0.15 - 0.25| + 0.6 * |0.85 - 0.5|
    expect(r.ece).toBeCloseTo(0.25, 12);
    // (0.85² + 3 * 0.15² + 3 * 0.15² + 3 * 0.85²) / 10
    expect(r.brier).toBeCloseTo(0.3025, 12);
    expect(r.bins[1]).toMatchObject({ count: 4, success_rate: 0.25 });
    expect(r.bins[8]).toMatchObject({ count: 6, success_rate: 0.5 });
  });

  it("bins edges: 0 first, 1 last, and a float like 0.57 in the bin it names", () => {
    const r = calibrationReport(items([[0, 0], [1, 1], [0.57, 1]]), { bins: 100 });
    expect(r.bins[0].count).toBe(1);
    expect(r.bins[99].count).toBe(1);
    expect(r.bins[57].count).toBe(1);
    expect(calibrationReport(items([[0.5, 1]]), { bins: 1 }).bins).toEqual([
      { lo: 0, hi: 1, count: 1, mean_score: 0.5, success_rate: 1 },
    ]);
  });

  it("counts the confusion at the threshold (score >= threshold predicts success; partial outcome fails)", () => {
    const set = items([[0.9, 1], [0.5, 0], [0.49, 1], [0.1, 0], [0.7, 1], [0.3, 0.5]]);
    expect(calibrationReport(set).confusion).toEqual({ tp: 2, fp: 1, tn: 2, fn: 1, precision: 2 / 3, recall: 2 / 3, accuracy: 4 / 6 });
    expect(calibrationReport(set, { threshold: 0.95 }).confusion).toMatchObject({ tp: 0, fp: 0, precision: null, recall: 0 });
    expect(calibrationReport(items([[0.9, 0]])).confusion).toMatchObject({ fp: 1, recall: null, accuracy: 0 });
  });

  it("shows length bias overall and among failures", () => {
    const lengths = [10, 20, 30, 40, 50, 5, 25];
    const set = items([[0.2, 0], [0.4, 0], [0.6, 0], [0.8, 0], [0.1, 1], [0.9, 1], [0.5, 1]]).map((item, k) => ({
      ...item,
      length: lengths[k],
    }));
    const r = calibrationReport(set);
    // Among failures, longer always scores higher; overall two items swap the extremes: sum d² = 72, rho = 1 - 432/336.
    expect(r.length_bias).toEqual({ overall: expect.closeTo(-2 / 7, 12), failures: 1, n_failures: 4 });
    expect(r.position_bias).toBeNull();
  });

  it("computes position bias over the items that give a position", () => {
    const set = items([[0.2, 0], [0.4, 0], [0.6, 1], [0.8, 1]]);
    set[0].answer_position = 0.9;
    set[1].answer_position = 0.5;
    set[2].answer_position = 0.1;
    expect(calibrationReport(set).position_bias).toEqual({ n: 3, spearman: -1 });
  });

  it("groups hacking candidates by group, largest first, ids by score then id", () => {
    const set: CalibrationItem[] = [
      { id: "m1", group: "math", score: 0.9, outcome: 0, length: 1 },
      { id: "m2", group: "math", score: 0.6, outcome: 0, length: 1 },
      { id: "m3", group: "math", score: 0.95, outcome: 0.5, length: 1 },
      { id: "m4", group: "math", score: 0.5, outcome: 0, length: 1 },
      { id: "x1", group: "math", score: 0.4, outcome: 0, length: 1 },
      { id: "s1", group: "math", score: 0.99, outcome: 1, length: 1 },
      { id: "c2", group: "code", score: 0.7, outcome: 0, length: 1 },
      { id: "c1", group: "code", score: 0.7, outcome: 0, length: 1 },
      { id: "u2", score: 0.8, outcome: 0, length: 1 },
      { id: "u1", score: 0.99, outcome: 0, length: 1 },
    ];
    expect(calibrationReport(set).hacking_candidates).toEqual({
      total: 8,
      groups: [
        { group: "math", count: 4, ids: ["m3", "m1", "m2", "m4"] },
        { group: "code", count: 2, ids: ["c1", "c2"] },
        { group: null, count: 2, ids: ["u1", "u2"] },
      ],
    });
  });

  it("lists at most 20 ids per group, highest scores first, but counts them all", () => {
    const set = Array.from({ length: 25 }, (_, k) => ({ id: `b${k}`, group: "big", score: 0.5 + k / 100, outcome: 0, length: 1 }));
    const { total, groups } = calibrationReport(set).hacking_candidates;
    expect(total).toBe(25);
    expect(groups[0].count).toBe(25);
    expect(groups[0].ids).toEqual(Array.from({ length: 20 }, (_, k) => `b${24 - k}`));
  });

  it("is JSON-safe", () => {
    const r = calibrationReport(MISCALIBRATED);
    expect(JSON.parse(JSON.stringify(r))).toEqual(r);
  });

  it.each([
    ["NaN score", { score: Number.NaN }, "score"],
    ["outcome 2", { outcome: 2 }, "outcome"],
    ["negative score", { score: -0.1 }, "score"],
    ["infinite length", { length: Number.POSITIVE_INFINITY }, "length"],
    ["negative length", { length: -1 }, "length"],
    ["answer_position 1.5", { answer_position: 1.5 }, "answer_position"],
    ["numeric group", { group: 3 as unknown as string }, "group"],
  ])("rejects %s naming the item and field", (_, patch, field) => {
    const set = items([[0.5, 1], [0.5, 0]]);
    Object.assign(set[1], patch);
    const error = thrown(() => calibrationReport(set));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.code).toBe("invalid_argument");
    expect(error.details).toMatchObject({ id: "i1", field });
    expect(error.message).toContain('"i1"');
    expect(error.message).toContain(field);
  });

  it("rejects an empty list, duplicate ids and bad options", () => {
    expect(thrown(() => calibrationReport([]))).toMatchObject({ code: "invalid_argument", details: { field: "items" } });
    expect(thrown(() => calibrationReport(items([[0.5, 1]]).concat(items([[0.2, 0]]))))).toMatchObject({
      code: "invalid_argument",
      details: { id: "i0", field: "id" },
    });
    expect(thrown(() => calibrationReport(MISCALIBRATED, { threshold: 2 }))).toMatchObject({ details: { field: "threshold" } });
    expect(thrown(() => calibrationReport(MISCALIBRATED, { bins: 0 }))).toMatchObject({ details: { field: "bins" } });
    expect(thrown(() => calibrationReport(MISCALIBRATED, { bins: 2.5 }))).toMatchObject({ details: { field: "bins" } });
  });
});

describe("reliabilityDiagramText", () => {
  it("has a header, the plot rows, axis, labels and one table row per bin", () => {
    const text = reliabilityDiagramText(calibrationReport(MISCALIBRATED));
    const lines = text.split("\n");
    // 1 header + 21 plot rows (40 / 2 + 1) + axis + x labels + table header + 10 bins.
    expect(lines).toHaveLength(1 + 21 + 2 + 1 + 10);
    expect(lines[0]).toContain("ECE=0.250");
    expect(lines[1]).toMatch(/^ 1\.0 \|\s*\.$/);
    expect(lines[21]).toMatch(/^ 0\.0 \|\./);
    expect(lines[22]).toBe(`     +${"-".repeat(40)}`);
    const plot = lines.slice(1, 22).join("\n");
    expect(plot.match(/\./g)!.length).toBeGreaterThanOrEqual(38);
    expect(plot.match(/o/g)).toHaveLength(2);
    expect(lines[26]).toMatch(/^\[0\.1,0\.2\)\s+4\s+0\.150\s+0\.250\s+\+0\.100$/);
    expect(lines[33]).toMatch(/^\[0\.8,0\.9\)\s+6\s+0\.850\s+0\.500\s+-0\.350$/);
    expect(lines[34]).toMatch(/^\[0\.9,1\.0\]\s+0\s+-\s+-\s+-$/);
  });

  it("follows the width and is deterministic", () => {
    const report = calibrationReport(MISCALIBRATED);
    expect(reliabilityDiagramText(report, 20).split("\n")).toHaveLength(1 + 11 + 2 + 1 + 10);
    expect(reliabilityDiagramText(report, 20)).toBe(reliabilityDiagramText(report, 20));
    expect(thrown(() => reliabilityDiagramText(report, 3))).toMatchObject({ code: "invalid_argument" });
  });
});

describe("reliabilityDiagramPng", () => {
  const report = calibrationReport(MISCALIBRATED);
  const buffer = reliabilityDiagramPng(report);
  const image = PNG.sync.read(buffer);
  const pixel = (x: number, y: number) => Array.from(image.data.subarray((y * image.width + x) * 4, (y * image.width + x) * 4 + 3));
  const { left, top, size } = PNG_LAYOUT;

  it("is a PNG of the layout's size", () => {
    expect([...buffer.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    expect([image.width, image.height]).toEqual([480, 480]);
  });

  it("draws the diagonal, the bars and the background in their colours", () => {
    // (0.5, 0.5) on the diagonal; no point of this report is near it.
    expect(pixel(left + size / 2, top + size / 2)).toEqual([...PNG_COLOURS.diagonal]);
    // Inside the 0.8–0.9 bin's bar (success rate 0.5), at height 0.2.
    expect(pixel(left + Math.round(0.82 * size), top + size - Math.round(0.2 * size))).toEqual([...PNG_COLOURS.bar]);
    // The point at (0.85, 0.5).
    expect(pixel(left + Math.round(0.85 * size), top + size - Math.round(0.5 * size))).toEqual([...PNG_COLOURS.point]);
    expect(pixel(5, 5)).toEqual([...PNG_COLOURS.background]);
  });

  it("is deterministic", () => {
    expect(reliabilityDiagramPng(report).equals(buffer)).toBe(true);
  });
});

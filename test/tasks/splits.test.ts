import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { errorCode as code } from "../helpers.js";
import { describe, expect, it } from "vitest";
import { EVAL_FRACTION, SPLITS, ValidationError, parseSplit, parseTaskId, sampleTaskIds, splitOf } from "../../src/index.js";


describe("splitOf", () => {
  it("is deterministic and pinned", () => {
    expect(SPLITS).toEqual(["train", "eval"]);
    expect(EVAL_FRACTION).toBe(0.1);
    expect(splitOf("tiny/easy/seed-8")).toBe("eval");
    expect(splitOf("tiny/easy/seed-1")).toBe("train");
    for (let i = 0; i < 50; i++) expect(splitOf(`tiny/easy/seed-${i}`)).toBe(splitOf(`tiny/easy/seed-${i}`));
  });

  it("puts roughly 10% of ids in eval", () => {
    let evalCount = 0;
    const n = 5000;
    for (let i = 0; i < n; i++) if (splitOf(`fam/easy/seed-${i}`) === "eval") evalCount++;
    const sd = Math.sqrt(n * 0.1 * 0.9);
    expect(Math.abs(evalCount - n * 0.1)).toBeLessThan(4 * sd);
  });

  it("depends on the whole id", () => {
    const splits = new Set<string>();
    for (let i = 0; i < 200; i++) splits.add(splitOf(`fam/hard/seed-${i}`));
    expect(splits).toEqual(new Set(["train", "eval"]));
  });

  it.each(["", "fam/easy", "fam/easy/seed-01", 5])("rejects malformed id %j", (raw) => {
    expect(code(() => splitOf(raw as string))).toBe("invalid_task_id");
  });
});

describe("parseSplit", () => {
  it("accepts train and eval", () => {
    expect(parseSplit("train")).toBe("train");
    expect(parseSplit("eval")).toBe("eval");
  });

  it.each(["test", "TRAIN", "", null, 1])("rejects %j naming the valid splits", (raw) => {
    expect(code(() => parseSplit(raw))).toBe("invalid_argument");
    expect(() => parseSplit(raw)).toThrow("valid: train, eval");
  });
});

describe("sampleTaskIds", () => {
  const base = { family: "inventory-restock", difficulties: ["easy", "medium", "hard"], n: 30, seed: 7 };

  it("is deterministic and gives distinct, well-formed ids", () => {
    const a = sampleTaskIds(base);
    expect(sampleTaskIds({ ...base })).toEqual(a);
    expect(a).toHaveLength(30);
    expect(new Set(a).size).toBe(30);
    for (const id of a) {
      const parsed = parseTaskId(id, { families: ["inventory-restock"], difficulties: base.difficulties });
      expect(parsed.index).toBeGreaterThanOrEqual(0);
      expect(parsed.index).toBeLessThan(2 ** 31);
    }
  });

  it("spreads round-robin over the difficulties", () => {
    const ids = sampleTaskIds(base);
    expect(ids.map((id) => id.split("/")[1])).toEqual(Array.from({ length: 30 }, (_, i) => base.difficulties[i % 3]));
  });

  it("depends on the seed and is a prefix-stable stream", () => {
    expect(sampleTaskIds({ ...base, seed: 8 })).not.toEqual(sampleTaskIds(base));
    expect(sampleTaskIds({ ...base, n: 10 })).toEqual(sampleTaskIds(base).slice(0, 10));
    expect(sampleTaskIds({ family: "f", difficulties: ["d"], n: 3 })).toEqual(sampleTaskIds({ family: "f", difficulties: ["d"], n: 3, seed: 0 }));
  });

  it.each(["train", "eval"] as const)("respects the %s split", (split) => {
    const ids = sampleTaskIds({ ...base, n: 40, split });
    expect(new Set(ids).size).toBe(40);
    for (const id of ids) expect(splitOf(id)).toBe(split);
  });

  it("train and eval samples are disjoint", () => {
    const train = new Set(sampleTaskIds({ ...base, n: 200, split: "train" }));
    for (const id of sampleTaskIds({ ...base, n: 200, split: "eval" })) expect(train.has(id)).toBe(false);
  });

  it("n = 0 gives no ids", () => {
    expect(sampleTaskIds({ ...base, n: 0 })).toEqual([]);
  });

  it.each([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "3" as unknown as number])("rejects n = %s", (n) => {
    expect(code(() => sampleTaskIds({ ...base, n }))).toBe("invalid_argument");
  });

  it("rejects an empty difficulty list", () => {
    expect(code(() => sampleTaskIds({ ...base, difficulties: [] }))).toBe("invalid_argument");
  });

  // BUG (src/tasks/splits.ts sampleTaskIds): family and difficulties are not validated; without a split
  // the function returns ids that parseTaskId rejects (e.g. "Bad Family/easy/seed-N").
  it("rejects a malformed family or difficulty instead of producing unparseable ids", () => {
    expect(() => sampleTaskIds({ family: "Bad Family", difficulties: ["easy"], n: 2 })).toThrow(ValidationError);
    expect(() => sampleTaskIds({ family: "fam", difficulties: ["Hard/x"], n: 2 })).toThrow(ValidationError);
  });

  // BUG (src/tasks/splits.ts sampleTaskIds): an unknown split (e.g. "test" from an unchecked caller)
  // makes the do/while loop spin forever, since splitOf never returns it. Expected: invalid_argument
  // (call parseSplit on options.split). Run in a child process so the hang cannot stall this worker.
  it("an unknown split is rejected instead of looping forever", async () => {
    const root = fileURLToPath(new URL("../../", import.meta.url));
    const code = [
      'const { sampleTaskIds } = await import("./src/index.ts");',
      'try { sampleTaskIds({ family: "f", difficulties: ["d"], n: 1, split: "test" }); console.log("returned"); }',
      "catch (e) { console.log(e.code); }",
    ].join("\n");
    const outcome = await promisify(execFile)(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], {
      cwd: root,
      timeout: 8000,
    }).then(
      ({ stdout }) => stdout.trim(),
      (error: { killed?: boolean; signal?: string }) => (error.killed ? "hung (killed after 8 s)" : `failed: ${String(error)}`),
    );
    expect(outcome).toBe("invalid_argument");
  });
});

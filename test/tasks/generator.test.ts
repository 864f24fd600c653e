import { describe, expect, it } from "vitest";
import {
  LlmixError,
  Rng,
  ValidationError,
  canonicalJson,
  fingerprint,
  generateTask,
  taskFingerprint,
  type TaskGenerator,
  type TaskId,
} from "../../src/index.js";
import { tinyTasks } from "../fixtures/tiny-env.js";
import { InventoryRestock } from "../../examples/inventory-restock.js";

describe("generateTask", () => {
  it("parses against the generator's rules and returns the canonical id", () => {
    const { id, task } = generateTask(tinyTasks, "tiny/hard/seed-42");
    expect(id).toEqual({ family: "tiny", difficulty: "hard", index: 42, id: "tiny/hard/seed-42" });
    expect(task).toEqual({ target: 4, cap: 10, label: "job-819-hard" });
  });

  it("hands the generator a stream derived from the id alone", () => {
    const seen: Array<{ id: TaskId; first: number }> = [];
    const gen: TaskGenerator<number> = {
      families: ["f"],
      difficulties: ["d"],
      generate: (id: TaskId, rng: Rng) => {
        const first = rng.nextUint32();
        seen.push({ id, first });
        return first;
      },
    };
    const a = generateTask(gen, "f/d/seed-3").task;
    const b = generateTask(gen, "f/d/seed-3").task;
    expect(a).toBe(b);
    expect(a).toBe(Rng.fromKey("task", "f/d/seed-3").nextUint32());
    expect(generateTask(gen, "f/d/seed-4").task).not.toBe(a);
    expect(seen).toHaveLength(3);
  });

  it.each([
    ["an unknown family", "other/easy/seed-1", "valid: tiny"],
    ["an unknown difficulty", "tiny/medium/seed-1", "valid: easy, hard, locked"],
    ["a malformed id", "tiny/easy/seed-01", "seed-N"],
  ])("rejects %s with invalid_task_id", (_name, raw, text) => {
    let error: unknown;
    try {
      generateTask(tinyTasks, raw);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as LlmixError).code).toBe("invalid_task_id");
    expect((error as LlmixError).message).toContain(text);
  });
});

describe("taskFingerprint", () => {
  it("is the fingerprint of the canonical JSON and stable across calls", () => {
    const { task } = generateTask(tinyTasks, "tiny/hard/seed-42");
    expect(taskFingerprint(task)).toBe(fingerprint(task));
    expect(taskFingerprint(task)).toBe(taskFingerprint(generateTask(tinyTasks, "tiny/hard/seed-42").task));
    expect(taskFingerprint({ b: 1, a: 2 })).toBe(taskFingerprint({ a: 2, b: 1 }));
  });

  it("golden fingerprints: a change to what a task id generates is visible", () => {
    expect(taskFingerprint(generateTask(tinyTasks, "tiny/hard/seed-42").task)).toBe(
      "5cd2a2b2161c31276bab0893e02225508ce06d72e8233e8647b40ca9e80c4ad6",
    );
    const inventory = new InventoryRestock().tasks;
    expect(taskFingerprint(generateTask(inventory, "inventory-restock/easy/seed-1").task)).toBe(
      "530d957131be3030edcdaffeb43ca648d07070e90ae053a946ef74bd9b7478ac",
    );
    expect(taskFingerprint(generateTask(inventory, "inventory-restock/hard/seed-771").task)).toBe(
      "4b86da4607b84e0891e17c4238dfbf191122a5e25c883a9179dfd01a572aa830",
    );
  });

  it("different ids give different tasks (no collisions across 300 ids)", () => {
    const inventory = new InventoryRestock().tasks;
    const prints = new Set<string>();
    for (let i = 0; i < 100; i++) {
      for (const d of ["easy", "medium", "hard"]) prints.add(taskFingerprint(generateTask(inventory, `inventory-restock/${d}/seed-${i}`).task));
    }
    expect(prints.size).toBe(300);
  });

  it("generated tasks are JSON (canonicalJson accepts them)", () => {
    const inventory = new InventoryRestock().tasks;
    const { task } = generateTask(inventory, "inventory-restock/medium/seed-5");
    expect(JSON.parse(canonicalJson(task))).toEqual(task);
  });
});

describe("deepFreeze", () => {
  it("freezes nested objects and arrays so an episode cannot change a shared task", async () => {
    const { deepFreeze } = await import("../../src/index.js");
    const task = deepFreeze({ items: [{ sku: "A", qty: 1 }], meta: { tags: ["x"] } });
    expect(Object.isFrozen(task.items[0])).toBe(true);
    expect(() => {
      (task.items[0] as { qty: number }).qty = 2;
    }).toThrow(TypeError);
    expect(() => (task.meta.tags as string[]).push("y")).toThrow(TypeError);
  });
});

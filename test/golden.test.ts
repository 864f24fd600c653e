/**
 * Golden fingerprints (DESIGN §2): what a task id generates, and the snapshot a reset produces, are
 * pinned. A change that alters them must bump the environment's version and update these values.
 */
import { describe, expect, it } from "vitest";
import { fingerprint, generateTask, taskFingerprint } from "../src/index.js";
import entry from "../examples/inventory-restock.js";

const GOLDEN = [
  ["inventory-restock/easy/seed-1", "530d957131be3030edcdaffeb43ca648d07070e90ae053a946ef74bd9b7478ac", "312cc83c4af824356e2d8bd4fab7aeba847b648e0fcce68ce4c7d643e34840a6"],
  ["inventory-restock/hard/seed-771", "4b86da4607b84e0891e17c4238dfbf191122a5e25c883a9179dfd01a572aa830", "cc3524310ddd7df9ee9350c7f190b07f71c8b9d65761e088227067a87b30dc99"],
] as const;

describe(`golden fingerprints of ${entry.id}@${entry.version}`, () => {
  it.each(GOLDEN)("%s", async (taskId, task, snapshot) => {
    const env = entry.create();
    expect(taskFingerprint(generateTask(env.tasks, taskId).task)).toBe(task);
    await env.reset(taskId, 7);
    expect(fingerprint(await env.snapshot())).toBe(snapshot);
    expect(entry.version).toBe("1.0.0");
  });
});

/**
 * The example environment validates restored worlds (issue 12, item 4): what it produces restores byte
 * for byte; an edited world is refused with invalid_snapshot naming what is wrong, leaving the episode.
 */
import { describe, expect, it } from "vitest";
import { rejection } from "../helpers.js";
import {
  canonicalJson,
  randomPolicy,
  runPolicy,
  toDecision,
  ValidationError,
  type Action,
  type EnvironmentSnapshot,
  type StepResult,
} from "../../src/index.js";
import { InventoryRestock } from "../../examples/inventory-restock.js";

type Snapshot = EnvironmentSnapshot & { world: { stock: Record<string, number>; orders: Array<{ sku: string; quantity: number }> } };

/** An episode after the reference solver's first order. */
async function orderedEpisode(): Promise<{ env: InventoryRestock; snapshot: Snapshot }> {
  const env = new InventoryRestock();
  const initial = await env.reset("inventory-restock/hard/seed-3", 1);
  await runPolicy(env, env.referenceSolver(), { maxSteps: 2, initial });
  return { env, snapshot: JSON.parse(JSON.stringify(await env.snapshot())) as Snapshot };
}

describe("inventory-restock snapshots", () => {
  it("restore byte for byte after every step of reference and random episodes", async () => {
    for (let i = 0; i < 12; i++) {
      const env = new InventoryRestock();
      const peer = new InventoryRestock();
      let observation = await env.reset(`inventory-restock/${["easy", "medium", "hard"][i % 3]}/seed-${i}`, i);
      const policy = i % 2 === 0 ? env.referenceSolver() : randomPolicy(i);
      const history: Array<{ action: Action; result: StepResult }> = [];
      for (let step = 1; step <= env.maxSteps; step++) {
        const action = toDecision(await policy.act({ step, observation, tools: env.tools(), history })).action as Action;
        const result = await env.step(action);
        history.push({ action, result });
        observation = result.observation;
        const snapshot = JSON.parse(JSON.stringify(await env.snapshot())) as Snapshot;
        await peer.restore(snapshot);
        expect(canonicalJson(await peer.snapshot())).toBe(canonicalJson(snapshot));
        if (result.terminated || result.truncated) break;
      }
    }
  });

  const sku = (s: Snapshot) => s.world.orders[0]!.sku;
  const edits: Array<[string, (s: Snapshot) => void, RegExp]> = [
    ["a mistyped stock", (s) => void ((s.world.stock as Record<string, unknown>)[sku(s)] = "12"), /snapshot\.world\.stock\.SKU-[\w-]+: .*expected number/],
    ["a missing field", (s) => void delete (s.world as Partial<Snapshot["world"]>).orders, /snapshot\.world\.orders: .*expected array/],
    ["an extra field", (s) => void ((s.world as Record<string, unknown>).cash = 5), /snapshot\.world: Unrecognized key: "cash"/],
    ["an order over the tool's limit", (s) => void (s.world.orders[0]!.quantity = 5000), /snapshot\.world\.orders\[0\]\.quantity/],
    ["stock that orders do not explain", (s) => void (s.world.stock[sku(s)]! += 1), /what it had plus what was ordered/],
    ["an order of an item the task does not have", (s) => void s.world.orders.push({ sku: "SKU-0000-XXX", quantity: 1 }), /an order names SKU-0000-XXX, which is not an item of the task/],
    ["an item the task does not have", (s) => void (s.world.stock["SKU-0000-XXX"] = 0), /the stock must list every item of the task once/],
  ];

  it.each(edits)("refuses %s with invalid_snapshot and keeps the episode", async (_name, edit, message) => {
    const { env, snapshot } = await orderedEpisode();
    const bad = structuredClone(snapshot);
    edit(bad);
    const error = await rejection(env.restore(bad));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.code).toBe("invalid_snapshot");
    expect(error.message).toMatch(message);
    expect(canonicalJson(await env.snapshot())).toBe(canonicalJson(snapshot));
  });
});

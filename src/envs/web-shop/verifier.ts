/**
 * The web-shop verifier: a state difference. What an episode did to the store — the orders it placed
 * (items, quantities, add-ons, address, shipping, coupon, gift wrap) and the returns it registered — must
 * equal what the reference solution does to a fresh copy of the same task. Anything extra (an item, a
 * protection plan, a second order, a return of the wrong item) or missing fails the task; the details
 * name each difference.
 */
import { canonicalJson, type JsonValue } from "../../core/json.js";
import { defineVerifier, type Verifier } from "../../rewards/verifier.js";
import type { Task } from "./tasks.js";
import type { World } from "./world.js";

/** The effects an episode had on the store, comparable across episodes of one task. */
export interface Effects {
  orders: { id: string; address: string; shipping: string; coupon: string | null; gift_wrap: number; items: { product_id: string; qty: number; protection: number }[] }[];
  returns: { order_item_id: number; kind: string; reason: string; replacement_id: string | null }[];
}

/** Read a world's effects (orders placed in the episode, returns registered). */
export function effectsOf(world: World): JsonValue {
  const db = world.db;
  const orders = db.all<{ id: string; address: string; shipping: string; coupon: string | null; gift_wrap: number }>("SELECT id, address, shipping, coupon, gift_wrap FROM orders WHERE placed_in_episode = 1 ORDER BY id");
  const effects: Effects = {
    orders: orders.map((o) => ({
      ...o,
      items: db.all<{ product_id: string; qty: number; protection: number }>("SELECT product_id, qty, protection FROM order_items WHERE order_id = ? ORDER BY product_id, protection, qty", [o.id]),
    })),
    returns: db.all<Effects["returns"][number]>("SELECT order_item_id, kind, reason, replacement_id FROM returns ORDER BY order_item_id"),
  };
  return effects as unknown as JsonValue;
}

/** What differs between two effects, in words (empty when equal). */
export function differences(actual: Effects, expected: Effects): string[] {
  const out: string[] = [];
  const key = (v: unknown) => canonicalJson(v as JsonValue);
  if (actual.orders.length !== expected.orders.length) out.push(`placed ${actual.orders.length} order(s); expected ${expected.orders.length}`);
  actual.orders.forEach((o, i) => {
    const want = expected.orders[i];
    if (!want) return;
    for (const field of ["address", "shipping", "coupon", "gift_wrap"] as const) if (o[field] !== want[field]) out.push(`order ${o.id}: ${field} ${JSON.stringify(o[field])}, expected ${JSON.stringify(want[field])}`);
    if (key(o.items) !== key(want.items)) out.push(`order ${o.id}: items ${key(o.items)}, expected ${key(want.items)}`);
  });
  if (key(actual.returns) !== key(expected.returns)) out.push(`returns ${key(actual.returns)}, expected ${key(expected.returns)}`);
  return out;
}

/** The verifier: score 1 when the episode's effects equal the reference's. */
export function effectsVerifier(_task: Task): Verifier<{ actual: JsonValue; expected: JsonValue }> {
  return defineVerifier("store-state", ({ actual, expected }) => {
    const diff = differences(actual as unknown as Effects, expected as unknown as Effects);
    return { score: diff.length === 0 ? 1 : 0, passed: diff.length === 0, details: { differences: diff, actual, expected } };
  });
}

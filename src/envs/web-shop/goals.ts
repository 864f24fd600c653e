/**
 * The goal conditions of a web-shop errand, stated from the task's ground truth alone (the product to
 * buy, its quantity, shipping, address and coupon; the item to return, the reason and the replacement)
 * — never from a run of the reference solver, which the verifier compares against. `llmix check`
 * (goal-conditions) plays the reference against these.
 */
import type { GoalCondition } from "../../core/environment.js";
import type { Task } from "./tasks.js";
import type { World } from "./world.js";

type OrderRow = { id: string; address: string; shipping: string; coupon: string | null; gift_wrap: number };
type ItemRow = { product_id: string; qty: number; protection: number };

const newOrders = (world: World) => world.db.all<OrderRow>("SELECT id, address, shipping, coupon, gift_wrap FROM orders WHERE placed_in_episode = 1 ORDER BY id");
const itemsOf = (world: World, order: string) => world.db.all<ItemRow>("SELECT product_id, qty, protection FROM order_items WHERE order_id = ?", [order]);

/** The goal conditions of one task. */
export function webShopGoals(task: Task): GoalCondition<World>[] {
  const e = task.errand;
  if (e.family === "buy") {
    const only = (world: World): OrderRow | null => {
      const orders = newOrders(world);
      return orders.length === 1 ? (orders[0] as OrderRow) : null;
    };
    return [
      { id: "one_order", description: "exactly one order was placed", holds: (w) => only(w) !== null },
      {
        id: "right_items",
        description: `the order holds ${e.quantity} of ${e.target} and nothing else`,
        holds: (w) => {
          const o = only(w);
          const items = o ? itemsOf(w, o.id) : [];
          return items.length === 1 && items[0]?.product_id === e.target && items[0].qty === e.quantity;
        },
      },
      { id: "no_add_ons", description: "no protection plan and no gift wrap", holds: (w) => { const o = only(w); return o !== null && o.gift_wrap === 0 && itemsOf(w, o.id).every((i) => i.protection === 0); } },
      { id: "address", description: `shipped to the ${e.address} address`, holds: (w) => only(w)?.address === e.address },
      { id: "shipping", description: `${e.shipping} shipping`, holds: (w) => only(w)?.shipping === e.shipping },
      { id: "coupon", description: e.coupon ? `coupon ${e.coupon} applied` : "no coupon", holds: (w) => only(w) !== null && only(w)?.coupon === e.coupon },
      { id: "no_return", description: "no return registered", holds: (w) => w.db.all("SELECT 1 FROM returns").length === 0 },
    ];
  }
  const returns = (world: World) => world.db.all<{ order_item_id: number; kind: string; reason: string; replacement_id: string | null }>("SELECT order_item_id, kind, reason, replacement_id FROM returns");
  return [
    { id: "one_return", description: `exactly one return, of item ${e.item_id}`, holds: (w) => { const r = returns(w); return r.length === 1 && r[0]?.order_item_id === e.item_id; } },
    { id: "reason", description: `the reason given is "${e.reason}"`, holds: (w) => returns(w)[0]?.reason === e.reason },
    {
      id: "resolution",
      description: e.kind === "exchange" ? `an exchange for ${e.replacement}` : "a refund",
      holds: (w) => { const r = returns(w)[0]; return r !== undefined && r.kind === e.kind && r.replacement_id === e.replacement; },
    },
    { id: "no_order", description: "no order was placed", holds: (w) => newOrders(w).length === 0 },
  ];
}

/**
 * A complete LLMix environment in one file: the example of docs/building-an-environment.md.
 *
 * A shop's stock list has items below their reorder point. The agent reads the stock (read tool),
 * orders exactly enough of each low item to bring it back to its target level (write tool), and says
 * it is done (message). The verifier compares the orders with the ones the reference solver places on
 * a fresh copy of the task (state difference).
 *
 * Run its QA checklist with:  node dist/cli/bin.js check --module examples/inventory-restock.ts
 */
import { z } from "zod";
import {
  BaseEnvironment,
  toolsFor,
  ToolError,
  ValidationError,
  diffJsonStates,
  entryFor,
  stateDiff,
  runVerifier,
  type Episode,
  type GoalCondition,
  type JsonValue,
  type Policy,
  type TaskGenerator,
  type TaskId,
  type Rng,
  type VerifierResult,
} from "llmix-rl";

// ---- Task: generated from the task id alone --------------------------------------------------
interface Item {
  sku: string;
  name: string;
  onHand: number;
  reorderPoint: number;
  target: number;
}
interface Task {
  items: Item[];
}

const PRODUCTS = ["bolts", "nuts", "washers", "hinges", "brackets", "screws", "anchors", "rivets", "clamps", "springs",
  "gaskets", "pins", "dowels", "hooks", "latches", "pulleys", "chains", "cables", "valves", "fuses"];
const SIZES = { easy: 5, medium: 10, hard: 20 } as const;
const LOW = { easy: 1, medium: 2, hard: 3 } as const;

const tasks: TaskGenerator<Task> = {
  families: ["inventory-restock"],
  difficulties: ["easy", "medium", "hard"],
  generate(id: TaskId, rng: Rng): Task {
    const difficulty = id.difficulty as keyof typeof SIZES;
    const names = rng.sample(PRODUCTS, SIZES[difficulty]);
    const low = new Set(rng.sample(names, LOW[difficulty]));
    const items = names.map((name) => {
      const reorderPoint = rng.int(5, 40);
      const target = reorderPoint + rng.int(20, 80);
      // Hard tasks put some items exactly at the reorder point: not low, a decoy.
      const onHand = low.has(name)
        ? rng.int(0, reorderPoint - 1)
        : difficulty === "hard" && rng.bool(0.3) ? reorderPoint : rng.int(reorderPoint + 1, target);
      return { sku: `SKU-${rng.int(1000, 9999)}-${name.slice(0, 3).toUpperCase()}`, name, onHand, reorderPoint, target };
    });
    return { items };
  },
};

// ---- World: the live state of one episode ----------------------------------------------------
interface World {
  stock: Record<string, number>;
  orders: Array<{ sku: string; quantity: number }>;
}

// ---- Tools: one read, one write -----------------------------------------------------------------
const defineTool = toolsFor<World, Task>();

const listStock = defineTool({
  name: "list_stock",
  description: "List every item with its SKU, quantity on hand, reorder point and target level.",
  input: z.object({}),
  effect: "read",
  latency: { kind: "uniform", minMs: 20, maxMs: 60 },
  handler: (_args, { task, world }) =>
    task.items.map((i) => ({ sku: i.sku, name: i.name, on_hand: world.stock[i.sku] ?? 0, reorder_point: i.reorderPoint, target: i.target })),
});

const orderStock = defineTool({
  name: "order_stock",
  description: "Order more of an item. The quantity arrives immediately and is added to the stock.",
  input: z.object({
    sku: z.string().describe("The SKU to order, e.g. SKU-1234-BOL"),
    quantity: z.number().int().min(1).max(1000).describe("How many units to order"),
  }),
  effect: "write",
  permission: "orders:create",
  cost: 0.001,
  latency: { kind: "fixed", ms: 120 },
  handler: (args, { world }) => {
    if (!Object.hasOwn(world.stock, args.sku)) throw new ToolError(`unknown SKU ${args.sku}`);
    world.stock[args.sku] = (world.stock[args.sku] ?? 0) + args.quantity;
    world.orders.push({ sku: args.sku, quantity: args.quantity });
    return `Ordered ${args.quantity} x ${args.sku}. On hand now: ${world.stock[args.sku]}.`;
  },
});

// ---- The environment ----------------------------------------------------------------------------
export class InventoryRestock extends BaseEnvironment<Task, World> {
  readonly info = {
    id: "inventory-restock",
    version: "1.0.0",
    description: "Restock every item below its reorder point up to its target level.",
    maxSteps: 12,
  };
  readonly tasks = tasks;

  protected createWorld(episode: { task: Task }): World {
    return { stock: Object.fromEntries(episode.task.items.map((i) => [i.sku, i.onHand])), orders: [] };
  }

  protected describeTask(): string {
    return [
      "You manage a small shop's stock.",
      "Every item whose quantity on hand is BELOW its reorder point must be restocked up to exactly its target level.",
      "Items at or above their reorder point must not be ordered. Use the tools, then reply DONE.",
    ].join("\n");
  }

  protected toolset() {
    return [listStock, orderStock];
  }

  /**
   * What done means, from the task alone (not from the reference's run): every low item at exactly its
   * target, every other item untouched. `llmix check` plays the reference against these, so the state
   * difference below cannot silently inherit a reference that orders the wrong amounts.
   */
  protected override goalConditions(): GoalCondition<World>[] {
    return this.episode.task.items.map((item) =>
      item.onHand < item.reorderPoint
        ? { id: `restocked_${item.sku}`, description: `${item.sku} at its target ${item.target}`, holds: (w: World) => w.stock[item.sku] === item.target }
        : { id: `untouched_${item.sku}`, description: `${item.sku} not ordered`, holds: (w: World) => w.stock[item.sku] === item.onHand },
    );
  }

  /** Orders must equal the reference solver's orders (state difference). */
  protected evaluate(episode: Episode<Task, World>): Promise<VerifierResult> {
    const verifier = stateDiff<World, JsonValue>({
      name: "orders",
      expected: async () => ((await this.referenceWorld()) as unknown as World).orders as unknown as JsonValue,
      actual: (world) => world.orders as unknown as JsonValue,
      diff: (expected, actual) => diffJsonStates(expected, actual, { unorderedArrays: true }),
      allOrNothing: true,
    });
    return runVerifier(verifier, episode.world);
  }

  protected snapshotWorld(world: World): JsonValue {
    return { stock: world.stock, orders: world.orders };
  }

  /** The exact shape of `snapshotWorld` output: `restore` refuses anything else with invalid_snapshot. */
  protected override worldSchema() {
    return z.strictObject({
      stock: z.record(z.string(), z.number().int().min(0)),
      orders: z.array(z.strictObject({ sku: z.string(), quantity: z.number().int().min(1).max(1000) })).max(this.maxSteps),
    });
  }

  /** Rebuild the world, refusing one the tools cannot make: each item's stock is what it had plus what was ordered. */
  protected restoreWorld(state: JsonValue, task: Task): World {
    const s = state as unknown as World;
    const items = new Map(task.items.map((i) => [i.sku, i.onHand]));
    const expected = new Map(items);
    for (const o of s.orders) {
      const stock = expected.get(o.sku);
      if (stock === undefined) throw new ValidationError("invalid_snapshot", `an order names ${o.sku}, which is not an item of the task`);
      expected.set(o.sku, stock + o.quantity);
    }
    const skus = Object.keys(s.stock);
    if (skus.length !== items.size || skus.some((sku) => s.stock[sku] !== expected.get(sku))) {
      throw new ValidationError("invalid_snapshot", "the stock must list every item of the task once: what it had plus what was ordered");
    }
    return { stock: { ...s.stock }, orders: s.orders.map((o) => ({ ...o })) };
  }

  /** Reads the stock, orders each low item up to target, then says DONE. */
  override referenceSolver(): Policy {
    const low = this.episode.task.items.filter((i) => i.onHand < i.reorderPoint);
    let next = 0;
    return {
      name: "reference",
      act: ({ step }) => {
        if (step === 1) return { type: "tool_call", tool: "list_stock", args: {} };
        const item = low[next++];
        if (item) return { type: "tool_call", tool: "order_stock", args: { sku: item.sku, quantity: item.target - item.onHand } };
        return { type: "message", content: "DONE" };
      },
    };
  }

  /** Probes that try to score without doing the task. */
  override probes(): Record<string, Policy> {
    const items = this.episode.task.items;
    let i = 0;
    return {
      // Claims success without acting.
      "claims-done": { name: "claims-done", act: () => ({ type: "message", content: "DONE" }) },
      // Tops up every item, low or not.
      "order-everything": {
        name: "order-everything",
        act: () => {
          const item = items[i++];
          return item
            ? { type: "tool_call", tool: "order_stock", args: { sku: item.sku, quantity: Math.max(1, item.target - item.onHand) } }
            : { type: "message", content: "DONE" };
        },
      },
    };
  }
}

export default entryFor(InventoryRestock);

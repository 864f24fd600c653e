/**
 * The web-shop world: the store's SQLite database (catalogue, the customer's coupons and orders, the cart,
 * returns, fired events) seeded from the task, and the customer's browser tab on the store (a WebSession
 * over the fast driver, or Chromium for evaluation).
 */
import { z } from "zod";
import { ValidationError } from "../../core/errors.js";
import { databaseTemplate, SqlDatabase, sqliteSnapshotSchema } from "../../sandboxes/database.js";
import { BrowserDriver } from "../../sandboxes/web/browser-driver.js";
import { lazyDriver } from "../../sandboxes/web/driver.js";
import { FastDriver } from "../../sandboxes/web/fast-driver.js";
import { WebSession, WebSessionStateSchema, type WebSessionState } from "../../sandboxes/web/session.js";
import { shopApp, SHOP_HOST } from "./app.js";
import type { Task } from "./tasks.js";

export const SCHEMA = `
CREATE TABLE products (id TEXT PRIMARY KEY, title TEXT NOT NULL, category TEXT NOT NULL, brand TEXT NOT NULL, model TEXT NOT NULL,
  color TEXT NOT NULL, size TEXT NOT NULL, material TEXT NOT NULL, price_cents INTEGER NOT NULL, rating INTEGER NOT NULL,
  stock INTEGER NOT NULL, ships_days INTEGER NOT NULL, badge TEXT, description TEXT NOT NULL, seller_note TEXT, featured INTEGER NOT NULL);
CREATE INDEX products_category ON products (category);
CREATE TABLE reviews (id INTEGER PRIMARY KEY, product_id TEXT NOT NULL, author TEXT NOT NULL, stars INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX reviews_product ON reviews (product_id);
CREATE TABLE coupons (code TEXT PRIMARY KEY, percent INTEGER NOT NULL, amount_cents INTEGER NOT NULL, min_subtotal_cents INTEGER NOT NULL,
  category TEXT, owned INTEGER NOT NULL);
CREATE TABLE cart_items (id INTEGER PRIMARY KEY, product_id TEXT NOT NULL, qty INTEGER NOT NULL CHECK (qty > 0), protection INTEGER NOT NULL);
CREATE TABLE cart (id INTEGER PRIMARY KEY CHECK (id = 1), coupon TEXT);
CREATE TABLE orders (id TEXT PRIMARY KEY, placed_at INTEGER NOT NULL, address TEXT NOT NULL, shipping TEXT NOT NULL, coupon TEXT,
  gift_wrap INTEGER NOT NULL, items_cents INTEGER NOT NULL, discount_cents INTEGER NOT NULL, extras_cents INTEGER NOT NULL,
  total_cents INTEGER NOT NULL, placed_in_episode INTEGER NOT NULL);
CREATE TABLE order_items (id INTEGER PRIMARY KEY, order_id TEXT NOT NULL, product_id TEXT NOT NULL, qty INTEGER NOT NULL,
  price_cents INTEGER NOT NULL, protection INTEGER NOT NULL);
CREATE INDEX order_items_order ON order_items (order_id);
CREATE TABLE returns (id INTEGER PRIMARY KEY, order_item_id INTEGER NOT NULL UNIQUE, kind TEXT NOT NULL, reason TEXT NOT NULL, replacement_id TEXT);
CREATE TABLE events (name TEXT PRIMARY KEY);
`;

/** Largest the store's database may grow (a cart cannot grow past it). */
export const MAX_DATABASE_BYTES = 8 * 1024 * 1024;

export interface World {
  db: SqlDatabase;
  web: WebSession;
}

/** Which driver renders the store: fast (happy-dom, the default) or browser (Chromium). */
export type WebDriverKind = "fast" | "browser";

/** The empty store database, built once: every episode's starts from its bytes, restores check its schema. */
const TEMPLATE = databaseTemplate(SCHEMA, 1024);

/** A fresh store database seeded from the task. */
export function seedDatabase(task: Task): SqlDatabase {
  const db = SqlDatabase.fromBytes(TEMPLATE.bytes(), { maxBytes: MAX_DATABASE_BYTES });
  db.transaction(() => {
    task.products.forEach((p, i) => {
      db.run(
        "INSERT INTO products VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [p.id, p.title, p.category, p.brand, p.model, p.color, p.size, p.material, p.price_cents, p.rating, p.stock, p.ships_days, p.badge, p.description, p.seller_note, featuredRank(p.id, i)],
      );
    });
    for (const r of task.reviews) db.run("INSERT INTO reviews (product_id, author, stars, body) VALUES (?,?,?,?)", [r.product_id, r.author, r.stars, r.body]);
    for (const c of task.coupons) db.run("INSERT INTO coupons VALUES (?,?,?,?,?,?)", [c.code, c.percent, c.amount_cents, c.min_subtotal_cents, c.category, c.owned ? 1 : 0]);
    db.run("INSERT INTO cart (id, coupon) VALUES (1, NULL)");
    for (const o of task.orders) {
      const items = o.items.reduce((sum, i) => sum + i.price_cents * i.qty, 0);
      db.run("INSERT INTO orders VALUES (?,?,?,?,?,?,?,?,?,?,0)", [o.id, o.placed_at, o.address, "standard", null, 0, items, 0, 0, items]);
      for (const i of o.items) db.run("INSERT INTO order_items VALUES (?,?,?,?,?,0)", [i.id, o.id, i.product_id, i.qty, i.price_cents]);
    }
  });
  return db;
}

/** The "Featured" order: a fixed shuffle of the catalogue (by a hash of the id), so it says nothing about price. */
function featuredRank(id: string, index: number): number {
  let h = 2166136261;
  for (const ch of `${id}:${index}`) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
  return h;
}

/** A tab on the store: the fast driver, or Chromium for evaluation and screenshots. */
export function openTab(db: SqlDatabase, task: Task, driver: WebDriverKind): WebSession {
  const app = shopApp(db, task);
  const d = driver === "browser" ? lazyDriver("browser", () => BrowserDriver.start(app)) : new FastDriver(app);
  return new WebSession(d, "/", { host: SHOP_HOST, viewLines: 80 });
}

/** The world's snapshot: the database and the tab's state. */
export function snapshotWorld(world: World): { db: ReturnType<SqlDatabase["snapshot"]>; web: WebSessionState } {
  return { db: world.db.snapshot(), web: world.web.snapshot() };
}

/** The shape of a snapshot, checked before a restore. */
export function worldSchema(): z.ZodType {
  return z.strictObject({ db: sqliteSnapshotSchema(MAX_DATABASE_BYTES), web: WebSessionStateSchema });
}

/** Restore a database from a snapshot, refusing one that is not the store's schema. */
export function restoreDatabase(snapshot: unknown): SqlDatabase {
  try {
    return SqlDatabase.fromSnapshot(snapshot as never, { maxBytes: MAX_DATABASE_BYTES, schema: TEMPLATE.schema(), strictTypes: true });
  } catch (error) {
    if (error instanceof ValidationError) throw error;
    throw new ValidationError("invalid_snapshot", `web-shop database: ${error instanceof Error ? error.message : String(error)}`);
  }
}

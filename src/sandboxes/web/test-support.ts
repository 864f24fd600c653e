/**
 * A small app for the web sandbox's own tests: a list with links, a GET search form, a POST form with
 * every control kind (text, checkbox, radio, select, textarea), a redirect after POST, and a long page.
 */
import { FormFields, html, parseAppUrl, type WebApp, type WebRequest, type WebResponse } from "./app.js";

export interface TestWorld {
  items: string[];
  orders: { item: string; qty: string; gift: boolean; speed: string; note: string }[];
}

/** The test app over a mutable world object (the real apps use a SQLite world). */
export function testApp(world: TestWorld): WebApp {
  return {
    host: "test.llmix.test",
    handle(request: WebRequest): WebResponse {
      const { path, query } = parseAppUrl(request.url);
      if (request.method === "POST" && path === "/order") {
        const form = new FormFields(request.form);
        world.orders.push({ item: form.get("item") ?? "", qty: form.get("qty") ?? "", gift: form.get("gift") === "yes", speed: form.get("speed") ?? "", note: form.get("note") ?? "" });
        return { kind: "redirect", location: `/orders?placed=${world.orders.length}` };
      }
      if (request.method !== "GET") return { kind: "page", status: 405, title: "Not allowed", body: "<p>Method not allowed</p>" };
      if (path === "/") {
        const q = query.get("q") ?? "";
        const items = world.items.filter((i) => i.includes(q));
        return {
          kind: "page",
          status: 200,
          title: "Home",
          body: html`<h1>Items</h1><form action="/"><label for="q">Search</label><input id="q" name="q" value="${q}"><button>Go</button></form>
            <ul>${items.map((i) => html`<li><a href="/item/${encodeURIComponent(i)}">${i}</a> <span>in stock</span></li>`)}</ul><p><a href="/long">Long page</a></p>`.value,
        };
      }
      if (path.startsWith("/item/")) {
        const item = decodeURIComponent(path.slice(6));
        if (!world.items.includes(item)) return { kind: "page", status: 404, title: "Not found", body: html`<p>No item ${item}</p>`.value };
        return {
          kind: "page",
          status: 200,
          title: item,
          body: html`<h1>${item}</h1><form method="post" action="/order"><input type="hidden" name="item" value="${item}">
            <label for="qty">Quantity</label><input id="qty" name="qty" type="number" value="1">
            <label for="gift">Gift wrap</label><input id="gift" type="checkbox" name="gift" value="yes" checked>
            <fieldset><legend>Shipping</legend><label for="s1">Standard</label><input id="s1" type="radio" name="speed" value="standard" checked><label for="s2">Express</label><input id="s2" type="radio" name="speed" value="express"></fieldset>
            <label for="color">Colour</label><select id="color" name="color"><option value="r">Red</option><option value="b" selected>Blue</option></select>
            <label for="note">Note</label><textarea id="note" name="note"></textarea>
            <button type="submit" name="go" value="buy">Place order</button><button type="button">Does nothing</button><button disabled>Disabled</button></form><a href="/">Back home</a>`.value,
        };
      }
      if (path === "/orders") {
        return { kind: "page", status: 200, title: "Orders", body: html`<h1>Orders</h1><p>Placed order ${query.get("placed") ?? "-"}</p><table>${world.orders.map((o) => html`<tr><td>${o.item}</td><td>${o.qty}</td><td>${o.speed}</td><td>${o.gift ? "gift" : "no gift"}</td><td>${o.note}</td></tr>`)}</table>`.value };
      }
      if (path === "/long") {
        return { kind: "page", status: 200, title: "Long", body: Array.from({ length: 150 }, (_, i) => `<p>Line ${i + 1}</p>`).join("") + '<a href="/">Home</a>' };
      }
      return { kind: "page", status: 404, title: "Not found", body: "<p>Not found</p>" };
    },
  };
}

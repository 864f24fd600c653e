/**
 * The browser driver in real Chromium (Debian's, as CI installs it), and the fast driver's faithfulness:
 * the same gestures give the same observations in both.
 */
import { afterAll, describe, expect, it } from "vitest";
import { BrowserDriver, closeSharedBrowser } from "./browser-driver.js";
import type { WebDriver } from "./driver.js";
import { FastDriver } from "./fast-driver.js";
import { WebSession, type WebAction } from "./session.js";
import { testApp, type TestWorld } from "./test-support.js";

afterAll(closeSharedBrowser);

/** A gesture by the name of the line it acts on, so both drivers resolve it on their own page. */
type Step = WebAction | { by: RegExp; act: (id: string) => WebAction };

const SCRIPT: Step[] = [
  { by: /textbox "Search"/, act: (id) => ({ kind: "fill", id, text: "an" }) },
  { kind: "press", key: "Enter" },
  { by: /link "banana"/, act: (id) => ({ kind: "click", id }) },
  { by: /checkbox "Gift wrap"/, act: (id) => ({ kind: "click", id }) },
  { by: /radio "Express"/, act: (id) => ({ kind: "click", id }) },
  { by: /combobox "Colour"/, act: (id) => ({ kind: "select", id, option: "Red" }) },
  { by: /textbox "Note"/, act: (id) => ({ kind: "fill", id, text: 'ring <b>twice</b> & "wait"' }) },
  { by: /textbox "Quantity"/, act: (id) => ({ kind: "fill", id, text: "2" }) },
  { by: /button "Does nothing"/, act: (id) => ({ kind: "click", id }) },
  { by: /button "Place order"/, act: (id) => ({ kind: "click", id }) },
  { kind: "back" },
  { kind: "goto", url: "/long" },
  { kind: "scroll", direction: "down" },
  { by: /link "Home"/, act: (id) => ({ kind: "click", id }) },
  { kind: "goto", url: "/item/nothing" },
];

async function play(driver: WebDriver): Promise<{ views: string[] }> {
  const session = new WebSession(driver, "/", { viewLines: 40 });
  const views = [(await session.view()).rendered];
  try {
    for (const step of SCRIPT) {
      let action: WebAction;
      if ("by" in step) {
        const line = (await session.view()).lines.find((l) => step.by.test(l));
        action = step.act(/^\[(\d+)\]/.exec(line ?? "")?.[1] ?? "0");
      } else action = step;
      views.push((await session.act(action)).rendered);
    }
  } finally {
    await session.close();
  }
  return { views };
}

describe("browser driver (Chromium)", () => {
  it("observes exactly what the fast driver observes, gesture by gesture, and changes the world alike", async () => {
    const fastWorld: TestWorld = { items: ["apple", "banana", "cherry"], orders: [] };
    const browserWorld: TestWorld = { items: ["apple", "banana", "cherry"], orders: [] };
    const fast = await play(new FastDriver(testApp(fastWorld)));
    const browser = await play(await BrowserDriver.start(testApp(browserWorld)));
    const differences = fast.views.flatMap((view, i) => (view === browser.views[i] ? [] : [`after step ${i}:\n--- fast\n${view}\n--- browser\n${browser.views[i]}`]));
    expect(differences).toEqual([]);
    expect(fast.views).toHaveLength(SCRIPT.length + 1);
    expect(browserWorld.orders).toEqual(fastWorld.orders);
    expect(fastWorld.orders).toEqual([{ item: "banana", qty: "2", gift: false, speed: "express", note: 'ring <b>twice</b> & "wait"' }]);
    expect(fast.views.at(-1)).toContain("(HTTP 404)");
  }, 60_000);

  it("takes screenshots, and the page reaches nothing but the app", async () => {
    const world: TestWorld = { items: ["apple"], orders: [] };
    const driver = await BrowserDriver.start(testApp(world));
    try {
      const session = new WebSession(driver, "/");
      await session.view();
      const png = await driver.screenshot();
      expect(png.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a");
      expect(png.length).toBeGreaterThan(1000);
      const refused = await session.act({ kind: "goto", url: "http://example.com/" }).catch((e: { code: string }) => e.code);
      expect(refused).toBe("navigation_refused");
    } finally {
      await driver.close();
    }
  }, 60_000);
});

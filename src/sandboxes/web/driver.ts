/**
 * A web driver loads an app's pages and performs the user's gestures on them. Two implement it: the
 * fast driver (happy-dom, in-process) and the browser driver (Chromium through playwright-core). The
 * session above them keeps the history, the scroll position and the edits, validates every action
 * against the current page, and renders the observation, so the drivers stay small and alike.
 */
import type { DomNode } from "./dom.js";

/** What a driver shows of its current page. */
export interface DriverPage {
  /** In-app URL: path and query. */
  url: string;
  status: number;
  title: string;
  root: DomNode | null;
  /** Pages loaded so far: a gesture that changes it navigated (even to the same URL). */
  loads: number;
}

/** A change of a control's state that does not navigate, kept so a restore can replay it. */
export type ControlEdit = { bid: string; fill: string } | { bid: string; checked: boolean } | { bid: string; option: string };

export interface WebDriver {
  readonly kind: "fast" | "browser";
  /** Navigate to an in-app URL with GET (goto, back, restore). */
  open(url: string): Promise<void>;
  /** Click an element, with the browser's default action (follow a link, submit a form, toggle a box). */
  click(bid: string): Promise<void>;
  /** Apply an edit (type into a text box, set a box, choose an option). Never navigates. */
  edit(edit: ControlEdit): Promise<void>;
  /** Press Enter in a text box: submits its form (implicit submission). */
  pressEnter(bid: string): Promise<void>;
  /** The current page, captured (assigns element ids on first sight). */
  capture(): Promise<DriverPage>;
  /** A PNG of the viewport, where the driver renders (the browser driver). */
  screenshot?(): Promise<Buffer>;
  close(): Promise<void>;
}

/** A driver started on first use: lets synchronous code (a world restore) hold a browser driver. */
export function lazyDriver(kind: WebDriver["kind"], start: () => Promise<WebDriver>): WebDriver {
  let driver: Promise<WebDriver> | null = null;
  const get = (): Promise<WebDriver> => (driver ??= start());
  return {
    kind,
    open: async (url) => (await get()).open(url),
    click: async (bid) => (await get()).click(bid),
    edit: async (edit) => (await get()).edit(edit),
    pressEnter: async (bid) => (await get()).pressEnter(bid),
    capture: async () => (await get()).capture(),
    screenshot: async () => {
      const d = await get();
      if (!d.screenshot) throw new Error(`the ${kind} driver takes no screenshots`);
      return d.screenshot();
    },
    close: async () => {
      if (driver !== null) await (await driver.catch(() => null))?.close();
      driver = null;
    },
  };
}

/**
 * A web session: one user's tab on an app, over either driver. It keeps what a restore needs (the history
 * of GET URLs, the edits made on the current page since it loaded, the scroll position), checks every
 * action against the current page before a driver runs it (so both drivers refuse the same actions with
 * the same typed errors), and renders the observation: the page's accessibility text, a window of it.
 */
import { z } from "zod";
import { SandboxError, ValidationError } from "../../core/errors.js";
import { renderAxTree, type AxTree } from "./axtree.js";
import type { ControlEdit, DriverPage, WebDriver } from "./driver.js";
import { resolveAppUrl } from "./url.js";

/** One gesture of the user. */
export type WebAction =
  | { kind: "click"; id: string }
  | { kind: "fill"; id: string; text: string }
  | { kind: "select"; id: string; option: string }
  | { kind: "press"; key: string; id?: string }
  | { kind: "goto"; url: string }
  | { kind: "back" }
  | { kind: "scroll"; direction: "up" | "down" };

/** Keys `press` knows: Enter submits a text box's form; the others have no effect on these apps. */
export const PRESS_KEYS = ["Enter", "Tab", "Escape"] as const;
/** Longest text `fill` accepts. */
export const MAX_FILL_LENGTH = 2000;

/** The session's own state, JSON, part of the environment's snapshot. */
export interface WebSessionState {
  history: string[];
  index: number;
  edits: ControlEdit[];
  scroll: number;
  focus: string | null;
}

const EditSchema = z.union([
  z.object({ bid: z.string(), fill: z.string() }).strict(),
  z.object({ bid: z.string(), checked: z.boolean() }).strict(),
  z.object({ bid: z.string(), option: z.string() }).strict(),
]);

/** Validates a stored session state (restores never trust their input). */
export const WebSessionStateSchema = z
  .object({
    history: z.array(z.string().max(4096)).min(1).max(10_000),
    index: z.number().int().min(0),
    edits: z.array(EditSchema).max(10_000),
    scroll: z.number().int().min(0),
    focus: z.string().nullable(),
  })
  .strict()
  .refine((s) => s.index < s.history.length, { message: "index must point into history" });

/** What the policy sees of the page. */
export interface WebView {
  url: string;
  title: string;
  status: number;
  /** The whole accessibility text. */
  lines: readonly string[];
  /** The observation: a header and the window of lines at the scroll position. */
  rendered: string;
}

export interface WebSessionOptions {
  /** Lines of accessibility text shown at once (scroll moves by this, less a few of overlap). Default 60. */
  viewLines?: number;
  /** The app's host, accepted in absolute URLs given to goto. */
  host?: string;
}

const OVERLAP = 5;

export class WebSession {
  private state: WebSessionState;
  private page: DriverPage | null = null;
  private tree: AxTree | null = null;
  /** A restored state not yet loaded into the driver (restores are lazy: the driver is async). */
  private pending = true;
  private readonly viewLines: number;

  constructor(
    readonly driver: WebDriver,
    home: string,
    private readonly options: WebSessionOptions = {},
  ) {
    this.viewLines = options.viewLines ?? 60;
    this.state = { history: [home], index: 0, edits: [], scroll: 0, focus: null };
  }

  /** The current page's view (loads the page first after a restore). */
  async view(): Promise<WebView> {
    await this.ensureLoaded();
    return this.render();
  }

  /** Perform an action and return the new view. Refused actions throw typed errors and change nothing. */
  async act(action: WebAction): Promise<WebView> {
    await this.ensureLoaded();
    switch (action.kind) {
      case "goto": {
        const url = resolveAppUrl(action.url, this.currentUrl(), this.options.host);
        await this.driver.open(url);
        await this.afterGesture(true);
        break;
      }
      case "back": {
        if (this.state.index === 0) throw new SandboxError("navigation_refused", "there is no earlier page in this tab's history");
        this.state = { ...this.state, index: this.state.index - 1, edits: [], scroll: 0, focus: null };
        await this.driver.open(this.currentUrl());
        await this.afterGesture(false);
        break;
      }
      case "scroll": {
        const step = Math.max(1, this.viewLines - OVERLAP);
        const last = Math.max(0, this.lines().length - this.viewLines);
        const scroll = action.direction === "down" ? Math.min(last, this.state.scroll + step) : Math.max(0, this.state.scroll - step);
        this.state = { ...this.state, scroll };
        break;
      }
      case "click": {
        const el = this.interactable(action.id);
        const before = this.page?.loads ?? 0;
        await this.driver.click(action.id);
        this.state = { ...this.state, focus: action.id };
        const page = await this.afterGesture(true, before);
        if (page.loads === before && (el.role === "checkbox" || el.role === "radio")) {
          const checked = this.tree?.elements.get(action.id)?.checked === true;
          this.state = { ...this.state, edits: [...this.state.edits, { bid: action.id, checked }] };
        }
        break;
      }
      case "fill": {
        const el = this.interactable(action.id);
        if (el.role !== "textbox") throw new SandboxError("not_interactable", `element ${action.id} is a ${el.role}, not a text box: fill types into text boxes`);
        if (action.text.length > MAX_FILL_LENGTH) throw new ValidationError("invalid_argument", `text is ${action.text.length} characters long; at most ${MAX_FILL_LENGTH}`);
        await this.record({ bid: action.id, fill: action.text });
        break;
      }
      case "select": {
        const el = this.interactable(action.id);
        if (el.role !== "combobox") throw new SandboxError("not_interactable", `element ${action.id} is a ${el.role}, not a drop-down: select chooses an option of a combobox`);
        const options = el.options ?? [];
        if (!options.includes(action.option)) throw new SandboxError("not_interactable", `element ${action.id} has no option ${JSON.stringify(action.option)}; its options: ${options.map((o) => JSON.stringify(o)).join(", ")}`);
        await this.record({ bid: action.id, option: action.option });
        break;
      }
      case "press": {
        if (!(PRESS_KEYS as readonly string[]).includes(action.key)) throw new ValidationError("invalid_argument", `unknown key ${JSON.stringify(action.key)}; keys: ${PRESS_KEYS.join(", ")}`);
        const target = action.id ?? this.state.focus;
        if (target === null) throw new SandboxError("not_interactable", "no element has the focus: name one with id");
        const el = this.interactable(target);
        this.state = { ...this.state, focus: target };
        if (action.key !== "Enter") break;
        const before = this.page?.loads ?? 0;
        if (el.role === "textbox") await this.driver.pressEnter(target);
        else if (el.role === "link" || el.role === "button") await this.driver.click(target);
        await this.afterGesture(true, before);
        break;
      }
    }
    return this.render();
  }

  /** The session's state for a snapshot. */
  snapshot(): WebSessionState {
    return structuredClone(this.state);
  }

  /** Take a snapshot's state; the page reloads from the world on the next view or action. */
  restore(state: WebSessionState): void {
    this.state = structuredClone(state);
    this.pending = true;
  }

  /** The URL of the current page. */
  currentUrl(): string {
    return this.state.history[this.state.index] as string;
  }

  async close(): Promise<void> {
    await this.driver.close();
  }

  private async ensureLoaded(): Promise<void> {
    if (!this.pending) return;
    this.pending = false;
    await this.driver.open(this.currentUrl());
    if (this.state.edits.length > 0) {
      await this.refresh(); // element ids are assigned when a page is first captured
      for (const edit of this.state.edits) await this.driver.edit(edit);
    }
    await this.refresh();
  }

  /** After a gesture: capture the page; a load moves the history (when `navigates`) and clears the edits. */
  private async afterGesture(navigates: boolean, loadsBefore?: number): Promise<DriverPage> {
    const page = await this.refresh();
    if (loadsBefore !== undefined && page.loads === loadsBefore) return page;
    if (navigates) {
      const history = [...this.state.history.slice(0, this.state.index + 1), page.url];
      this.state = { ...this.state, history, index: history.length - 1 };
    }
    this.state = { ...this.state, edits: [], scroll: 0, focus: null };
    return page;
  }

  private async record(edit: ControlEdit): Promise<void> {
    await this.driver.edit(edit);
    this.state = { ...this.state, edits: [...this.state.edits, edit], focus: edit.bid };
    await this.refresh();
  }

  private async refresh(): Promise<DriverPage> {
    this.page = await this.driver.capture();
    this.tree = renderAxTree(this.page.root);
    return this.page;
  }

  private lines(): readonly string[] {
    return this.tree?.lines ?? [];
  }

  private interactable(id: string) {
    if (typeof id !== "string" || !/^[0-9]{1,9}$/.test(id)) throw new ValidationError("invalid_argument", `element id must be the number in brackets, e.g. "12"; got ${JSON.stringify(id)}`);
    const el = this.tree?.elements.get(id);
    if (el === undefined) throw new SandboxError("stale_element", `element ${id} is not a control on this page (ids change when the page changes: read the page again)`);
    if (el.disabled) throw new SandboxError("not_interactable", `element ${id} (${el.role} ${JSON.stringify(el.name)}) is disabled`);
    return el;
  }

  private render(): WebView {
    const page = this.page as DriverPage;
    const lines = this.lines();
    const from = Math.min(this.state.scroll, Math.max(0, lines.length - 1));
    const shown = lines.slice(from, from + this.viewLines);
    const header = `Page: ${page.title} — ${page.url}${page.status !== 200 ? ` (HTTP ${page.status})` : ""}`;
    const footer =
      lines.length > this.viewLines
        ? `(lines ${from + 1}-${from + shown.length} of ${lines.length}${from + shown.length < lines.length ? "; scroll down for more" : ""}${from > 0 ? "; scroll up for earlier lines" : ""})`
        : null;
    return { url: page.url, title: page.title, status: page.status, lines, rendered: [header, ...shown, ...(footer ? [footer] : [])].join("\n") };
  }
}

/**
 * The fast driver: pages parsed into happy-dom documents in-process, the app called directly. Scripts are
 * never evaluated (happy-dom's default, and apps ship none), so the browser's default actions are done
 * here, as the HTML standard defines them: following a link, submitting a form with its submitter
 * ("constructing the entry list"), implicit submission on Enter, toggling checkboxes and radio groups.
 * The faithfulness test plays the same episodes in Chromium and compares the observations.
 */
import type { Window } from "happy-dom";
import { SandboxError } from "../../core/errors.js";
import { renderDocument, type WebApp, type WebRequest } from "./app.js";
import { captureDom, type MiniDocument } from "./dom.js";
import type { ControlEdit, DriverPage, WebDriver } from "./driver.js";
import { resolveAppUrl } from "./url.js";

/** Redirects followed for one navigation before the page is an error. */
const MAX_REDIRECTS = 5;

// happy-dom's element types, reduced to what this driver uses.
type HdElement = {
  tagName: string;
  getAttribute(name: string): string | null;
  hasAttribute(name: string): boolean;
  closest(selector: string): HdElement | null;
  querySelectorAll(selector: string): ArrayLike<HdElement>;
  value: string;
  checked: boolean;
  selected: boolean;
  selectedIndex: number;
  multiple: boolean;
  disabled: boolean;
  form?: HdElement | null;
  options?: ArrayLike<HdElement>;
  textContent: string | null;
};
type HdDocument = MiniDocument & { querySelector(selector: string): HdElement | null };

// happy-dom takes ~0.7 s to import: loaded when the first page opens, not by every `import "llmix-rl"`.
// Each driver has its own window, closed with it: a window keeps every document it parsed (~19 KB each
// once its queued tasks ran, bench/web.ts), so one window shared by a long-lived process would only grow.
let happyDom: Promise<typeof import("happy-dom")> | null = null;

export class FastDriver implements WebDriver {
  readonly kind = "fast" as const;
  private window: Window | null = null;
  private parser: { parseFromString(html: string, type: "text/html"): unknown } | null = null;
  private doc: HdDocument | null = null;
  private url = "/";
  private status = 200;
  private loads = 0;

  constructor(private readonly app: WebApp) {}

  async open(url: string): Promise<void> {
    if (this.window === null) {
      happyDom ??= import("happy-dom");
      this.window = new (await happyDom).Window({ url: "http://localhost/" });
      this.parser = new this.window.DOMParser();
    }
    this.navigate({ method: "GET", url, form: [] });
  }

  async click(bid: string): Promise<void> {
    const el = this.element(bid);
    const tag = el.tagName.toUpperCase();
    const type = (el.getAttribute("type") ?? "").toLowerCase();
    if (tag === "A" && el.hasAttribute("href")) {
      this.navigate({ method: "GET", url: resolveAppUrl(el.getAttribute("href") ?? "", this.url), form: [] });
    } else if ((tag === "BUTTON" && (type === "" || type === "submit")) || (tag === "INPUT" && type === "submit")) {
      const form = el.closest("form");
      if (form !== null) this.submit(form, el);
    } else if (tag === "INPUT" && type === "checkbox") {
      el.checked = !el.checked;
    } else if (tag === "INPUT" && type === "radio") {
      el.checked = true;
    }
  }

  async edit(edit: ControlEdit): Promise<void> {
    const el = this.element(edit.bid);
    if ("fill" in edit) el.value = edit.fill;
    else if ("checked" in edit) el.checked = edit.checked;
    else {
      const options = Array.from(el.options ?? []);
      const option = options.find((o) => squash(o.textContent ?? "") === edit.option) ?? options.find((o) => o.value === edit.option);
      // Through selectedIndex: happy-dom leaves the other options of a single select selected when one
      // option's `selected` is set, and the form would then send both.
      if (option) el.selectedIndex = options.indexOf(option);
    }
  }

  async pressEnter(bid: string): Promise<void> {
    const el = this.element(bid);
    const form = el.closest("form");
    if (form === null) return;
    // Implicit submission: the form's default button is its first submit button, in tree order.
    const submitter = Array.from(form.querySelectorAll("button, input[type=submit]")).find((b) => {
      const type = (b.getAttribute("type") ?? "").toLowerCase();
      return b.tagName.toUpperCase() === "INPUT" ? type === "submit" : type === "" || type === "submit";
    });
    if (submitter && submitter.disabled) return;
    this.submit(form, submitter ?? null);
  }

  async capture(): Promise<DriverPage> {
    if (this.doc === null) return { url: this.url, status: this.status, title: "", root: null, loads: this.loads };
    const { title, root } = captureDom(this.doc);
    return { url: this.url, status: this.status, title, root, loads: this.loads };
  }

  async close(): Promise<void> {
    await this.window?.happyDOM.close();
    this.window = null;
  }

  private element(bid: string): HdElement {
    const el = this.doc?.querySelector(`[data-bid="${CSS_ESCAPE(bid)}"]`) ?? null;
    if (el === null) throw new SandboxError("stale_element", `element ${bid} is not on this page`);
    return el;
  }

  /** Submit a form: its entry list, by its method, to its action (relative to the page). */
  private submit(form: HdElement, submitter: HdElement | null): void {
    const method = (form.getAttribute("method") ?? "get").toLowerCase() === "post" ? "POST" : "GET";
    const action = resolveAppUrl(form.getAttribute("action") ?? this.url, this.url);
    const entries = entryList(form, submitter);
    if (method === "POST") this.navigate({ method, url: action, form: entries });
    else {
      const target = new URL(action, "http://localhost");
      target.search = new URLSearchParams(entries as [string, string][]).toString();
      this.navigate({ method, url: target.pathname + target.search, form: [] });
    }
  }

  private navigate(request: WebRequest): void {
    let current = request;
    for (let hops = 0; ; hops++) {
      const response = this.app.handle(current);
      if (response.kind === "page") {
        this.url = current.url;
        this.status = response.status;
        this.doc = (this.parser as NonNullable<typeof this.parser>).parseFromString(renderDocument(response), "text/html") as unknown as HdDocument;
        resetSelects(this.doc);
        this.loads++;
        return;
      }
      if (hops >= MAX_REDIRECTS) throw new SandboxError("navigation_refused", `too many redirects from ${request.url}`);
      current = { method: "GET", url: resolveAppUrl(response.location, current.url), form: [] };
    }
  }
}

/**
 * Give each single select the selectedness the HTML standard's parser gives it: the last option with a
 * `selected` attribute, else the first. happy-dom 21 selects the wrong option when the selected one is
 * not the first (found by the faithfulness test against Chromium).
 */
function resetSelects(doc: HdDocument): void {
  for (const select of Array.from((doc as unknown as HdElement).querySelectorAll("select:not([multiple])"))) {
    const options = Array.from(select.options ?? []);
    let index = -1;
    options.forEach((o, i) => {
      if (o.hasAttribute("selected")) index = i;
    });
    select.selectedIndex = index >= 0 ? index : options.length > 0 ? 0 : -1;
  }
}

function squash(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** Escape an element id for a CSS attribute selector (ids are digits, but never trust that). */
function CSS_ESCAPE(value: string): string {
  return value.replace(/["\\]/g, "\\$&");
}

/** The HTML standard's entry list of a form: enabled named controls, checked boxes, the submitter. */
export function entryList(form: HdElement, submitter: HdElement | null): [string, string][] {
  const entries: [string, string][] = [];
  for (const el of Array.from(form.querySelectorAll("input, select, textarea, button"))) {
    const name = el.getAttribute("name");
    if (name === null || name === "" || el.disabled || el.closest("fieldset[disabled]") !== null) continue;
    const tag = el.tagName.toUpperCase();
    const type = (el.getAttribute("type") ?? "").toLowerCase();
    if (tag === "BUTTON" || (tag === "INPUT" && ["submit", "button", "reset", "image"].includes(type))) {
      if (el === submitter) entries.push([name, el.getAttribute("value") ?? ""]);
      continue;
    }
    if (tag === "INPUT" && (type === "checkbox" || type === "radio")) {
      if (el.checked) entries.push([name, el.getAttribute("value") ?? "on"]);
      continue;
    }
    if (tag === "INPUT" && type === "file") continue;
    if (tag === "SELECT") {
      const options = Array.from(el.options ?? []);
      if (el.multiple) {
        for (const option of options) if (option.selected) entries.push([name, option.value]);
      } else if (el.selectedIndex >= 0 && options[el.selectedIndex]) {
        entries.push([name, (options[el.selectedIndex] as HdElement).value]);
      }
      continue;
    }
    entries.push([name, el.value]);
  }
  return entries;
}

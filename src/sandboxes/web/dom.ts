/**
 * The page as data: `captureDom` walks a live DOM and returns a plain tree of what the observation needs
 * (tags, a few attributes, live form state), giving every element a stable id (`data-bid`, as BrowserGym's
 * `bid`) the first time it sees it. The same function runs on the fast driver's happy-dom document and,
 * serialized by playwright, inside Chromium, so the two drivers observe through one piece of code and a
 * difference in their observations is a difference in the DOMs, never in the capture.
 *
 * It must stay self-contained (no imports, no closures, no helpers emitted by the compiler): playwright
 * sends its source text to the page.
 */

/** One captured node: an element, or a text node (`tag` "#text", `text` set). */
export interface DomNode {
  tag: string;
  /** The element's stable id on this page; absent on text nodes. */
  bid?: string;
  /** The attributes the observation uses (see CAPTURED_ATTRIBUTES), as written in the page. */
  attrs?: Record<string, string>;
  text?: string;
  /** Live state of form controls: what the user typed or chose, not the attribute the page shipped. */
  value?: string;
  checked?: boolean;
  selected?: boolean;
  children?: DomNode[];
}

/** The structural subset of the DOM captureDom touches, so this file needs no DOM typings. */
export interface MiniNode {
  nodeType: number;
  nodeValue: string | null;
  childNodes: ArrayLike<MiniNode>;
}
export interface MiniElement extends MiniNode {
  tagName: string;
  getAttribute(name: string): string | null;
  setAttribute(name: string, value: string): void;
  hasAttribute(name: string): boolean;
  value?: string;
  checked?: boolean;
  selected?: boolean;
}
export interface MiniDocument {
  body: MiniElement | null;
  documentElement: MiniElement;
  title: string;
}

/** Capture the document's body as a DomNode tree, assigning `data-bid` to elements that have none. */
export function captureDom(doc?: MiniDocument): { title: string; root: DomNode | null } {
  const d: MiniDocument = doc ?? (globalThis as unknown as { document: MiniDocument }).document;
  const KEEP = ["id", "for", "href", "type", "name", "value", "placeholder", "aria-label", "alt", "hidden", "aria-hidden", "disabled", "multiple", "role", "action", "method", "readonly", "checked", "selected"];
  const SKIP = new Set(["SCRIPT", "STYLE", "TEMPLATE", "NOSCRIPT", "HEAD", "META", "LINK"]);
  const root = d.documentElement;
  let next = Number(root.getAttribute("data-bid-next") ?? "1");
  const walk = (node: MiniNode): DomNode | null => {
    if (node.nodeType === 3) return { tag: "#text", text: node.nodeValue ?? "" };
    if (node.nodeType !== 1) return null;
    const el = node as MiniElement;
    const tag = el.tagName.toUpperCase();
    if (SKIP.has(tag)) return null;
    let bid = el.getAttribute("data-bid");
    if (bid === null) {
      bid = String(next++);
      el.setAttribute("data-bid", bid);
    }
    const attrs: Record<string, string> = {};
    for (const name of KEEP) {
      const value = el.getAttribute(name);
      if (value !== null) attrs[name] = value;
    }
    const out: DomNode = { tag: tag.toLowerCase(), bid, attrs };
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") out.value = String(el.value ?? "");
    if (tag === "INPUT") out.checked = el.checked === true;
    if (tag === "OPTION") out.selected = el.selected === true;
    const children: DomNode[] = [];
    const kids = el.childNodes;
    for (let i = 0; i < kids.length; i++) {
      const child = walk(kids[i] as MiniNode);
      if (child !== null) children.push(child);
    }
    if (children.length > 0) out.children = children;
    return out;
  };
  const body = d.body === null ? null : walk(d.body);
  root.setAttribute("data-bid-next", String(next));
  return { title: d.title, root: body };
}

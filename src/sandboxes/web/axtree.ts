/**
 * The accessibility text of a page: one line per control or heading, `[bid] role "name" state`, and one
 * line per run of visible text, in document order. It is what a policy reads (the observation) and what
 * the faithfulness test compares between the drivers, so it is a pure function of the captured tree.
 */
import type { DomNode } from "./dom.js";

/** What an element id names on the current page, for validating an action before a driver runs it. */
export interface AxElement {
  role: AxRole;
  name: string;
  disabled: boolean;
  /** Checkboxes and radio buttons: whether it is checked. */
  checked?: boolean;
  /** Comboboxes: the options' texts, in order. */
  options?: string[];
}

export type AxRole = "link" | "button" | "textbox" | "checkbox" | "radio" | "combobox" | "heading" | "img" | "generic";

/** The rendered page: its lines and the interactive elements by bid. */
export interface AxTree {
  lines: string[];
  elements: Map<string, AxElement>;
}

const BLOCK = new Set(["p", "div", "li", "ul", "ol", "tr", "table", "thead", "tbody", "section", "article", "nav", "main", "header", "footer", "form", "fieldset", "legend", "dl", "dt", "dd", "br", "hr", "aside", "blockquote", "pre", "caption"]);
const CELL = new Set(["td", "th"]);
const TEXT_INPUTS = new Set(["", "text", "search", "email", "number", "tel", "url", "password", "date"]);
const BUTTON_INPUTS = new Set(["submit", "button", "reset"]);

/** Collapse whitespace as a browser's rendering does. */
function squash(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** Quote a name or value for a line: JSON string syntax, so a name cannot fake a line break or a bid. */
function q(text: string): string {
  return JSON.stringify(text);
}

function textOf(node: DomNode): string {
  if (node.tag === "#text") return node.text ?? "";
  if (isHidden(node)) return "";
  return (node.children ?? []).map(textOf).join(node.tag === "br" ? "\n" : "");
}

function isHidden(node: DomNode): boolean {
  const a = node.attrs ?? {};
  return a.hidden !== undefined || a["aria-hidden"] === "true" || (node.tag === "input" && (a.type ?? "").toLowerCase() === "hidden");
}

/** The role of an element, or null when it is not a control or heading (its text is read as text). */
export function roleOf(node: DomNode): AxRole | null {
  const a = node.attrs ?? {};
  const type = (a.type ?? "").toLowerCase();
  switch (node.tag) {
    case "a":
      return a.href !== undefined ? "link" : null;
    case "button":
      return "button";
    case "input":
      if (TEXT_INPUTS.has(type)) return "textbox";
      if (BUTTON_INPUTS.has(type)) return "button";
      if (type === "checkbox") return "checkbox";
      if (type === "radio") return "radio";
      return null;
    case "textarea":
      return "textbox";
    case "select":
      return "combobox";
    case "h1":
    case "h2":
    case "h3":
    case "h4":
    case "h5":
    case "h6":
      return "heading";
    case "img":
      return "img";
    default:
      return null;
  }
}

/** Render a captured page as accessibility text. */
export function renderAxTree(root: DomNode | null): AxTree {
  const lines: string[] = [];
  const elements = new Map<string, AxElement>();
  if (root === null) return { lines, elements };
  const labels = new Map<string, string>();
  const collectLabels = (node: DomNode): void => {
    if (node.tag === "label" && node.attrs?.for !== undefined) labels.set(node.attrs.for, squash(textOf(node)));
    for (const child of node.children ?? []) collectLabels(child);
  };
  collectLabels(root);

  let buffer = "";
  const flush = (): void => {
    const text = squash(buffer.replace(/\s*\|\s*$/, ""));
    if (text !== "" && text !== "|") lines.push(text);
    buffer = "";
  };
  const nameOf = (node: DomNode, role: AxRole): string => {
    const a = node.attrs ?? {};
    if (a["aria-label"] !== undefined) return squash(a["aria-label"]);
    if (role === "img") return squash(a.alt ?? "");
    if (role === "textbox" || role === "checkbox" || role === "radio" || role === "combobox") {
      return (a.id !== undefined ? labels.get(a.id) : undefined) ?? squash(a.placeholder ?? a.name ?? "");
    }
    if (node.tag === "input") return squash(a.value ?? "");
    return squash(textOf(node));
  };
  const walk = (node: DomNode): void => {
    if (node.tag === "#text") {
      buffer += node.text ?? "";
      return;
    }
    if (isHidden(node)) return;
    if (node.tag === "label" && node.attrs?.for !== undefined) return; // read as its control's name
    const role = roleOf(node);
    if (role !== null) {
      flush();
      const name = nameOf(node, role);
      const disabled = node.attrs?.disabled !== undefined;
      const element: AxElement = { role, name, disabled };
      if (role === "checkbox" || role === "radio") element.checked = node.checked === true;
      if (role === "combobox") element.options = optionsOf(node).map((o) => squash(textOf(o)));
      elements.set(node.bid ?? "", element);
      lines.push(`[${node.bid}] ${describe(node, role, name)}${disabled ? " disabled" : ""}`);
      return;
    }
    const block = BLOCK.has(node.tag);
    if (block) flush();
    for (const child of node.children ?? []) walk(child);
    if (CELL.has(node.tag)) buffer += " | ";
    if (block) flush();
  };
  walk(root);
  flush();
  return { lines, elements };
}

function optionsOf(select: DomNode): DomNode[] {
  return (select.children ?? []).filter((c) => c.tag === "option");
}

function describe(node: DomNode, role: AxRole, name: string): string {
  switch (role) {
    case "heading":
      return `heading ${q(name)} level=${node.tag.slice(1)}`;
    case "link":
      return `link ${q(name)} href=${q(node.attrs?.href ?? "")}`;
    case "textbox":
      return `textbox ${q(name)} value=${q(node.value ?? "")}`;
    case "checkbox":
    case "radio":
      return `${role} ${q(name)}${node.checked ? " checked" : ""}`;
    case "combobox": {
      const options = optionsOf(node);
      const chosen = options.find((o) => o.selected);
      return `combobox ${q(name)} value=${q(chosen ? squash(textOf(chosen)) : "")} options=[${options.map((o) => q(squash(textOf(o)))).join(", ")}]`;
    }
    default:
      return `${role} ${q(name)}`;
  }
}

/**
 * Keys: j/k or the arrows move through the rows of a table or the steps of an episode, Enter opens the
 * current row, `/` focuses the first filter, `c` marks the current episode for comparison (the second
 * mark opens the comparison), Esc leaves a field or goes back up, `?` shows the keys. The views only
 * mark what these act on: `data-nav-item` rows (with a `data-nav-primary` link and `data-episode-id`),
 * `data-filter` fields, and `data-parent` / `data-page-episode` on the view's root.
 */
import { toggleCompareMark } from "./hooks";
import { links, navigate } from "./router";

/** The keys, as the help lists them. */
export const KEYS: ReadonlyArray<[string, string]> = [
  ["j / ↓", "next row or step"],
  ["k / ↑", "previous row or step"],
  ["Enter", "open the current row"],
  ["/", "focus the filter"],
  ["c", "mark the current episode for comparison (two marks open the comparison)"],
  ["Esc", "leave a field; otherwise back up (episode → run → runs)"],
  ["?", "show or hide these keys"],
];

const TEXT_INPUTS = new Set(["text", "search", "number", "password", "email", "url", "tel"]);

/** Keys typed here are text, not commands. */
function isTyping(el: Element | null): boolean {
  if (!(el instanceof HTMLElement)) return false;
  if (el instanceof HTMLInputElement) return TEXT_INPUTS.has(el.type);
  return el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement || el.isContentEditable;
}

const navItems = () => [...document.querySelectorAll<HTMLElement>("main [data-nav-item]")];

/** The row or step the keys act on: the one holding focus, else the one last moved to. */
function currentItem(): HTMLElement | undefined {
  const items = navItems();
  return items.find((i) => i.contains(document.activeElement)) ?? items.find((i) => i.classList.contains("nav-current"));
}

/** Move to the next (+1) or previous (-1) row or step; the first move lands on the first. */
function move(delta: number): boolean {
  const items = navItems();
  if (items.length === 0) return false;
  const current = currentItem();
  const index = current ? items.indexOf(current) : -1;
  const next = items[index === -1 ? 0 : Math.max(0, Math.min(items.length - 1, index + delta))] as HTMLElement;
  for (const item of items) item.classList.toggle("nav-current", item === next);
  (next.querySelector<HTMLElement>("[data-nav-primary]") ?? next).focus();
  next.scrollIntoView({ block: "nearest" });
  return true;
}

/** Mark the current episode (a row's, else the page's); the second mark opens the comparison. */
function markForCompare(): boolean {
  const id = currentItem()?.dataset.episodeId ?? document.querySelector<HTMLElement>("main [data-page-episode]")?.dataset.pageEpisode;
  if (!id) return false;
  const marks = toggleCompareMark(id);
  if (marks.length === 2 && marks.includes(id)) navigate(links.compare(marks[0] as string, marks[1] as string));
  return true;
}

/** Listen for the keys; `toggleHelp` shows or hides the list of keys. */
export function installKeyboard(toggleHelp: () => void): void {
  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    const target = document.activeElement;
    if (event.key === "Escape") {
      if (target instanceof HTMLElement && target !== document.body && isTyping(target)) target.blur();
      else {
        const parent = document.querySelector<HTMLElement>("main [data-parent]")?.dataset.parent;
        if (parent) navigate(parent);
      }
      event.preventDefault();
      return;
    }
    if (isTyping(target)) return;
    let handled = false;
    switch (event.key) {
      case "j":
      case "ArrowDown":
        handled = move(1);
        break;
      case "k":
      case "ArrowUp":
        handled = move(-1);
        break;
      case "Enter": {
        // A focused link or button opens itself; Enter elsewhere in a row opens the row.
        if (target instanceof HTMLAnchorElement || target instanceof HTMLButtonElement || target instanceof HTMLInputElement || target?.tagName === "SUMMARY") return;
        const link = currentItem()?.querySelector<HTMLAnchorElement>("[data-nav-primary]");
        if (link) {
          link.click();
          handled = true;
        }
        break;
      }
      case "/": {
        const filter = document.querySelector<HTMLElement>("main [data-filter]");
        if (filter) {
          filter.focus();
          handled = true;
        }
        break;
      }
      case "c":
        handled = markForCompare();
        break;
      case "?":
        toggleHelp();
        handled = true;
        break;
    }
    if (handled) event.preventDefault();
  });
}

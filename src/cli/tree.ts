/**
 * Plain JSON values as an indented tree for a person (verdicts, their checks and evidence): one line
 * per scalar, objects as `key: value`, arrays as `- item`, nesting by two spaces. Long strings wrap at
 * `width` under their key rather than running off as one line of JSON; multi-line strings keep their lines.
 */

/** Render `value` as indented lines, `indent` spaces deep, wrapping strings at `width` columns. */
export function formatTree(value: unknown, indent = 0, width = 100): string {
  return treeLines(value, indent, width, 0).join("\n");
}

/** Levels shown as a tree; deeper values (an agent's arguments can nest without end) are elided. */
const MAX_DEPTH = 12;

function treeLines(value: unknown, indent: number, width: number, depth: number): string[] {
  const pad = " ".repeat(indent);
  if (depth >= MAX_DEPTH && value !== null && typeof value === "object") return [`${pad}… (nested deeper than ${MAX_DEPTH} levels)`];
  if (Array.isArray(value)) {
    if (value.length === 0) return [`${pad}(none)`];
    return value.flatMap((item) => {
      if (isScalar(item)) return wrap(scalar(item), width - indent - 2).map((line, i) => `${pad}${i === 0 ? "- " : "  "}${line}`);
      const [first = "", ...rest] = treeLines(item, indent + 2, width, depth + 1);
      return [`${pad}- ${first.trimStart()}`, ...rest];
    });
  }
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) return [`${pad}(empty)`];
    return entries.flatMap(([key, item]) => {
      if (isScalar(item)) {
        const text = scalar(item);
        const room = width - indent - key.length - 2;
        if (text.length <= room && !text.includes("\n")) return [`${pad}${key}: ${text}`];
        return [`${pad}${key}:`, ...wrap(text, width - indent - 2).map((line) => `${pad}  ${line}`)];
      }
      return [`${pad}${key}:`, ...treeLines(item, indent + 2, width, depth + 1)];
    });
  }
  return wrap(scalar(value), width - indent).map((line) => `${pad}${line}`);
}

function isScalar(value: unknown): boolean {
  return value === null || typeof value !== "object" || (Array.isArray(value) && value.length === 0);
}

function scalar(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number") return String(Math.round(value * 1e4) / 1e4);
  if (Array.isArray(value)) return "(none)";
  return String(value);
}

/**
 * Break text into lines of at most `width` characters, at spaces where possible. Text that has lines of
 * its own (a patch, a log) keeps them exactly, spaces included: rewrapping would change what it says.
 */
function wrap(text: string, width: number): string[] {
  if (text.includes("\n")) return text.split("\n");
  const room = Math.max(20, width);
  const out: string[] = [];
  for (const paragraph of [text]) {
    let line = "";
    for (const word of paragraph.split(" ")) {
      if (line !== "" && line.length + 1 + word.length > room) {
        out.push(line);
        line = "";
      }
      for (let w = word; ; ) {
        if (line === "" && w.length > room) {
          out.push(w.slice(0, room));
          w = w.slice(room);
          continue;
        }
        line = line === "" ? w : `${line} ${w}`;
        break;
      }
    }
    out.push(line);
  }
  return out;
}

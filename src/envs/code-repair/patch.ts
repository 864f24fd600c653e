/**
 * Unified diffs: parse a patch as `diff -u` / `git diff` writes it, apply it to file contents, and write
 * one (for the reference solver). Application is all-or-nothing and every refusal names the file, the
 * hunk and the line that did not match, so an agent can fix its patch instead of guessing.
 *
 * Tolerated, because models write them: text before the first `---` line, `a/` and `b/` path prefixes,
 * hunk headers whose counts exceed the lines given, hunks that moved (they are searched for near their
 * stated line, then anywhere in the file), trailing whitespace differences in context lines.
 */
import { ToolError } from "../../core/errors.js";

/** One line of a hunk. */
export interface HunkLine {
  op: " " | "-" | "+";
  text: string;
}

/** A hunk: where it says it applies, and its lines. */
export interface Hunk {
  header: string;
  oldStart: number;
  newStart: number;
  lines: HunkLine[];
  /** A "\ No newline at end of file" marker followed the new side's last line (an added or context line). */
  noNewlineAtEnd: boolean;
}

/** The changes to one file. A null path is /dev/null (the file is created or deleted). */
export interface FilePatch {
  oldPath: string | null;
  newPath: string | null;
  hunks: Hunk[];
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

function patchPath(raw: string): string | null {
  const path = raw.replace(/\t.*$/, "").trim();
  if (path === "/dev/null") return null;
  return path.replace(/^[ab]\//, "");
}

/** Parse a unified diff into file patches; throws ToolError naming the line that is not part of one. */
export function parsePatch(text: string): FilePatch[] {
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  // A final newline is not an empty context line.
  while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  const patches: FilePatch[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (!line.startsWith("--- ") || !(lines[i + 1] ?? "").startsWith("+++ ")) {
      if (patches.length > 0 && line.startsWith("@@")) throw new ToolError(`patch line ${i + 1}: hunk header "${line}" outside a file (each file needs "--- old" and "+++ new" lines first)`);
      i++;
      continue;
    }
    const patch: FilePatch = { oldPath: patchPath(line.slice(4)), newPath: patchPath(lines[i + 1]!.slice(4)), hunks: [] };
    if (patch.oldPath === null && patch.newPath === null) throw new ToolError(`patch line ${i + 1}: both sides are /dev/null`);
    i += 2;
    while (i < lines.length && lines[i]!.startsWith("@@")) {
      const header = lines[i]!;
      const m = HUNK_HEADER.exec(header);
      if (!m) throw new ToolError(`patch line ${i + 1}: malformed hunk header "${header}" (expected "@@ -start,count +start,count @@")`);
      let oldLeft = m[2] === undefined ? 1 : Number(m[2]);
      let newLeft = m[4] === undefined ? 1 : Number(m[4]);
      const hunk: Hunk = { header: header.replace(/ @@.*$/, " @@"), oldStart: Number(m[1]), newStart: Number(m[3]), lines: [], noNewlineAtEnd: false };
      i++;
      while (i < lines.length && (oldLeft > 0 || newLeft > 0)) {
        const l = lines[i]!;
        if (l.startsWith("@@") || (l.startsWith("--- ") && (lines[i + 1] ?? "").startsWith("+++ ")) || l.startsWith("diff ")) break;
        const op = l === "" ? " " : l[0];
        if (op === "\\") {
          if (hunk.lines.at(-1)?.op !== "-") hunk.noNewlineAtEnd = true;
          i++;
          continue;
        }
        if (op !== " " && op !== "-" && op !== "+") throw new ToolError(`patch line ${i + 1}: "${l.slice(0, 80)}" is not a hunk line (hunk lines start with " ", "-" or "+")`);
        hunk.lines.push({ op, text: l.slice(1) });
        if (op !== "+") oldLeft--;
        if (op !== "-") newLeft--;
        i++;
      }
      if (oldLeft < 0 || newLeft < 0) throw new ToolError(`patch: hunk ${header} has more lines than its header says`);
      while (i < lines.length && lines[i]!.startsWith("\\")) {
        if (hunk.lines.at(-1)?.op !== "-") hunk.noNewlineAtEnd = true;
        i++;
      }
      if (hunk.lines.length === 0) throw new ToolError(`patch: hunk ${header} has no lines`);
      patch.hunks.push(hunk);
    }
    if (patch.hunks.length === 0) throw new ToolError(`patch: the change to ${patch.newPath ?? patch.oldPath} has no hunks`);
    if (i < lines.length && !lines[i]!.startsWith("--- ") && !lines[i]!.startsWith("diff ") && lines[i]!.trim() !== "") {
      throw new ToolError(`patch line ${i + 1}: "${lines[i]!.slice(0, 80)}" follows a hunk whose header counts are already used up; fix the counts in the "@@" header`);
    }
    patches.push(patch);
  }
  if (patches.length === 0) throw new ToolError('no file changes found: a unified diff needs "--- a/path", "+++ b/path" and "@@ -start,count +start,count @@" lines');
  return patches;
}

function splitLines(content: string): { lines: string[]; newlineAtEnd: boolean } {
  if (content === "") return { lines: [], newlineAtEnd: true };
  const lines = content.split("\n");
  const newlineAtEnd = lines[lines.length - 1] === "";
  if (newlineAtEnd) lines.pop();
  return { lines, newlineAtEnd };
}

function matchesAt(lines: readonly string[], at: number, want: readonly string[], loose: boolean): boolean {
  if (at < 0 || at + want.length > lines.length) return false;
  for (let k = 0; k < want.length; k++) {
    const have = lines[at + k]!;
    if (loose ? have.trimEnd() !== want[k]!.trimEnd() : have !== want[k]) return false;
  }
  return true;
}

/** Where a hunk's old lines are: at its stated line, else the nearest match after the previous hunk. */
function locate(lines: readonly string[], want: readonly string[], expected: number, from: number): number {
  for (const loose of [false, true]) {
    if (expected >= from && matchesAt(lines, expected, want, loose)) return expected;
    for (let d = 1; d <= lines.length; d++) {
      if (expected - d >= from && matchesAt(lines, expected - d, want, loose)) return expected - d;
      if (matchesAt(lines, expected + d, want, loose)) return expected + d;
    }
  }
  return -1;
}

/** Apply one file's hunks to its content (null: the file does not exist). Returns the new content, or null when the patch deletes the file. */
export function applyFilePatch(content: string | null, patch: FilePatch, display: string): string | null {
  if (content === null && patch.oldPath !== null) throw new ToolError(`${display}: No such file or directory (to create a file, the patch's old side must be /dev/null)`);
  if (content !== null && patch.oldPath === null) throw new ToolError(`${display}: the patch creates this file, but it already exists`);
  const { lines, newlineAtEnd } = splitLines(content ?? "");
  let eofNewline = newlineAtEnd;
  let offset = 0;
  let from = 0;
  for (const [index, hunk] of patch.hunks.entries()) {
    const want = hunk.lines.filter((l) => l.op !== "+").map((l) => l.text);
    // "-L,0" inserts after line L; any other hunk starts at line L.
    const expected = want.length === 0 ? hunk.oldStart + offset : Math.max(0, hunk.oldStart - 1 + offset);
    const at = want.length === 0 ? Math.min(expected, lines.length) : locate(lines, want, expected, from);
    if (at < 0) {
      const label = `hunk ${index + 1} of ${patch.hunks.length} (${hunk.header}) for ${display}`;
      let why = "";
      const base = Math.min(Math.max(0, hunk.oldStart - 1 + offset), lines.length);
      for (let k = 0; k < want.length; k++) {
        const have = lines[base + k];
        if (have === undefined) {
          why = `: the file has only ${lines.length} lines, so line ${base + k + 1} (\`${want[k]}\`) is missing`;
          break;
        }
        if (have !== want[k]) {
          why = `: line ${base + k + 1} should be \`${want[k]}\` but is \`${have}\``;
          break;
        }
      }
      throw new ToolError(`${label} does not apply${why}. Its context and removed lines match nowhere in the file. Nothing was changed; read the file again and make the patch against its current text.`);
    }
    // Context lines keep the file's own text (they may have matched up to trailing whitespace).
    const put: string[] = [];
    let k = at;
    for (const l of hunk.lines) {
      if (l.op === " ") put.push(lines[k++]!);
      else if (l.op === "-") k++;
      else put.push(l.text);
    }
    const reachesEnd = at + want.length === lines.length;
    lines.splice(at, want.length, ...put);
    offset += put.length - want.length;
    from = at + put.length;
    if (reachesEnd) eofNewline = !hunk.noNewlineAtEnd;
  }
  if (patch.newPath === null) {
    if (lines.length > 0) throw new ToolError(`${display}: the patch deletes the file but ${lines.length} lines would remain`);
    return null;
  }
  return lines.length === 0 ? "" : lines.join("\n") + (eofNewline ? "\n" : "");
}

/** Longest-common-subsequence line diff as a list of operations. A last line without newline ends in "\u0000". */
function diffLines(a: readonly string[], b: readonly string[]): HunkLine[] {
  const n = a.length;
  const m = b.length;
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  }
  const out: HunkLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      out.push({ op: " ", text: a[i]! });
      i++;
      j++;
    } else if (j < m && (i === n || lcs[i]![j + 1]! >= lcs[i + 1]![j]!)) {
      out.push({ op: "+", text: b[j++]! });
    } else {
      out.push({ op: "-", text: a[i++]! });
    }
  }
  return out;
}

/** A unified diff (`--- a/path`, `+++ b/path`, hunks with `context` lines around each change) from `before` to `after`. */
export function unifiedDiff(path: string, before: string, after: string, context = 3): string {
  // Tag a last line that has no newline, so "x" and "x\n" differ and the marker can be written.
  const tagged = (text: string) => {
    const { lines, newlineAtEnd } = splitLines(text);
    if (!newlineAtEnd && lines.length > 0) lines[lines.length - 1] += "\u0000";
    return lines;
  };
  const ops = diffLines(tagged(before), tagged(after));
  const changed = ops.map((o, k) => (o.op !== " " ? k : -1)).filter((k) => k >= 0);
  if (changed.length === 0) return "";
  // Group changes whose context windows touch into one hunk.
  const groups: Array<[number, number]> = [];
  for (const k of changed) {
    const last = groups.at(-1);
    if (last && k - last[1] <= 2 * context) last[1] = k;
    else groups.push([k, k]);
  }
  let text = `--- a/${path}\n+++ b/${path}\n`;
  for (const [first, last] of groups) {
    const start = Math.max(0, first - context);
    const end = Math.min(ops.length - 1, last + context);
    let oldLine = 1;
    let newLine = 1;
    for (let k = 0; k < start; k++) {
      if (ops[k]!.op !== "+") oldLine++;
      if (ops[k]!.op !== "-") newLine++;
    }
    const body = ops.slice(start, end + 1);
    const oldCount = body.filter((o) => o.op !== "+").length;
    const newCount = body.filter((o) => o.op !== "-").length;
    text += `@@ -${oldCount === 0 ? oldLine - 1 : oldLine},${oldCount} +${newCount === 0 ? newLine - 1 : newLine},${newCount} @@\n`;
    for (const o of body) {
      text += o.text.endsWith("\u0000") ? `${o.op}${o.text.slice(0, -1)}\n\\ No newline at end of file\n` : `${o.op}${o.text}\n`;
    }
  }
  return text;
}

/**
 * Word expansion in bash order: tilde and parameter expansion, field splitting of unquoted
 * parameters, pathname (glob) expansion against the sandbox file system, quote removal.
 *
 * Expansion is where a short command line can become a huge one (`$x$x$x...`, or a glob that
 * climbs back up with `..` between wildcards), so it is bounded: the characters one call produces
 * are charged to the work budget and capped at MAX_EXPANDED_LENGTH, and a glob may produce at most
 * MAX_GLOB_RESULTS paths. A caller without a budget (such as a static check of a command before it
 * runs) gets a fresh one with the default limit.
 */
import { SandboxError } from "../../core/errors.js";
import type { MemoryFileSystem } from "../filesystem.js";
import { compileGlob, escapeGlob, hasGlobMeta, matchGlob, unescapeGlob } from "./glob.js";
import { FS_CALL_COST, FS_ENTRY_COST, MAX_EXPANDED_LENGTH, MAX_GLOB_RESULTS, WorkBudget } from "./limits.js";
import type { Word } from "./parser.js";

/** What expansion needs from the shell. */
export interface ExpandEnv {
  /** Value of a parameter (named or special such as "?"), or undefined when unset. */
  param(name: string): string | undefined;
  fs: MemoryFileSystem;
  cwd: string;
  /** The command line's work budget; default: a fresh one. */
  budget?: WorkBudget;
}

interface Chunk {
  text: string;
  /** Unquoted text: glob characters in it are live. */
  glob: boolean;
}

interface Field {
  chunks: Chunk[];
  /** Had a quoted part, so it survives even when empty ("" is an argument). */
  keep: boolean;
}

/** The running size of one expansion: every produced piece is charged and counted against the cap. */
class Output {
  private length = 0;

  constructor(readonly budget: WorkBudget) {}

  /** Accounts for `text` before it is copied anywhere (so `$x$x$x...` is refused before it is built) and returns it. */
  add(text: string): string {
    this.length += text.length;
    this.budget.checkSize(this.length, MAX_EXPANDED_LENGTH, "maxExpandedLength", "argument list too long after expansion");
    this.budget.charge(text.length);
    return text;
  }
}

/** Expands words into argument strings (several per word after splitting or globbing, or none). */
export function expandWords(words: Word[], env: ExpandEnv): string[] {
  const output = new Output(env.budget ?? new WorkBudget());
  const out: string[] = [];
  for (const word of words) {
    for (const field of splitWord(word, env, output)) out.push(...globField(field, env, output));
  }
  return out;
}

/** Expansion without splitting or globbing, as for assignment values. */
export function expandPlain(word: Word, env: ExpandEnv): string {
  const output = new Output(env.budget ?? new WorkBudget());
  let text = "";
  for (const part of word.parts) {
    if (part.kind === "text") text += output.add(part.value);
    else if (part.kind === "tilde") text += output.add(env.param("HOME") ?? "~");
    else text += output.add(env.param(part.name) ?? "");
  }
  return text;
}

function splitWord(word: Word, env: ExpandEnv, output: Output): Field[] {
  const fields: Field[] = [];
  let cur: Field = { chunks: [], keep: false };
  const finish = (): void => {
    if (cur.keep || cur.chunks.some((c) => c.text !== "")) fields.push(cur);
    cur = { chunks: [], keep: false };
  };
  for (const part of word.parts) {
    if (part.kind === "text") {
      cur.chunks.push({ text: output.add(part.value), glob: !part.quoted });
      if (part.quoted) cur.keep = true;
    } else if (part.kind === "tilde") {
      cur.chunks.push({ text: output.add(env.param("HOME") ?? "~"), glob: false });
    } else {
      const value = output.add(env.param(part.name) ?? "");
      if (part.quoted) {
        cur.chunks.push({ text: value, glob: false });
        cur.keep = true;
        continue;
      }
      // Unquoted expansion: split on blanks (default IFS); the pieces stay glob-able.
      const pieces = value.split(/[ \t\n]+/);
      pieces.forEach((piece, index) => {
        if (index > 0) finish();
        if (piece !== "") cur.chunks.push({ text: piece, glob: true });
      });
    }
  }
  finish();
  return fields;
}

/** A field's final arguments: its text, or the paths its glob matches (counted on top of the pattern). */
function globField(field: Field, env: ExpandEnv, output: Output): string[] {
  const literal = field.chunks.map((c) => c.text).join("");
  if (!field.chunks.some((c) => c.glob && hasGlobMeta(c.text))) return [literal];
  const pattern = field.chunks.map((c) => (c.glob ? c.text : escapeGlob(c.text))).join("");
  const matches = expandGlob(pattern, env.fs, env.cwd, output.budget);
  return matches.length > 0 ? matches.map((path) => output.add(path)) : [unescapeGlob(pattern)];
}

function joinDisplay(prefix: string, name: string): string {
  if (prefix === "") return name;
  return prefix.endsWith("/") ? prefix + name : `${prefix}/${name}`;
}

/**
 * Expands a glob pattern against the file system; results are sorted in C order and keep the
 * form typed (relative stays relative). Dot files match only a pattern segment starting with '.'.
 * Every directory read, entry considered and path checked is charged (the file system is called
 * directly, so the charges are explicit); more than MAX_GLOB_RESULTS paths is a size_limit stop.
 */
export function expandGlob(pattern: string, fs: MemoryFileSystem, cwd: string, budget: WorkBudget = new WorkBudget()): string[] {
  const absolute = pattern.startsWith("/");
  const dirOnly = pattern.endsWith("/");
  const segments = pattern.split("/").filter((s) => s !== "");
  let candidates: Array<{ display: string; abs: string }> = [{ display: absolute ? "/" : "", abs: absolute ? "/" : cwd }];
  for (const segment of segments) {
    const next: Array<{ display: string; abs: string }> = [];
    budget.charge(candidates.length);
    if (!hasGlobMeta(segment)) {
      const name = unescapeGlob(segment);
      for (const c of candidates) next.push({ display: joinDisplay(c.display, name), abs: joinDisplay(c.abs, name) });
    } else {
      const tokens = compileGlob(segment);
      const dotOk = segment.startsWith(".") || segment.startsWith("\\.");
      for (const c of candidates) {
        let names: string[];
        budget.charge(FS_CALL_COST);
        try {
          names = fs.readdir(c.abs);
        } catch (error) {
          if (error instanceof SandboxError) continue;
          throw error;
        }
        budget.charge(names.length * FS_ENTRY_COST);
        for (const name of names) {
          if (name.startsWith(".") && !dotOk) continue;
          if (matchGlob(tokens, name, { meter: budget })) next.push({ display: joinDisplay(c.display, name), abs: joinDisplay(c.abs, name) });
        }
        if (next.length > MAX_GLOB_RESULTS) {
          budget.refuse("maxGlobResults", `${pattern}: pattern expands to more than ${MAX_GLOB_RESULTS} paths`, { max: MAX_GLOB_RESULTS });
        }
      }
    }
    candidates = next;
    if (candidates.length === 0) return [];
  }
  const results: string[] = [];
  budget.charge(candidates.length * FS_CALL_COST);
  for (const c of candidates) {
    try {
      const stat = fs.stat(c.abs);
      if (dirOnly && stat.type !== "dir") continue;
      results.push(dirOnly ? `${c.display}/` : c.display);
    } catch (error) {
      if (!(error instanceof SandboxError)) throw error;
    }
  }
  return results.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

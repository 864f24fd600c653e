/**
 * Word expansion in bash order: tilde and parameter expansion, field splitting of unquoted
 * parameters, pathname (glob) expansion against the sandbox file system, quote removal.
 */
import { SandboxError } from "../../core/errors.js";
import type { MemoryFileSystem } from "../filesystem.js";
import { compileGlob, escapeGlob, hasGlobMeta, matchGlob, unescapeGlob } from "./glob.js";
import type { Word } from "./parser.js";

/** What expansion needs from the shell. */
export interface ExpandEnv {
  /** Value of a parameter (named or special such as "?"), or undefined when unset. */
  param(name: string): string | undefined;
  fs: MemoryFileSystem;
  cwd: string;
}

/** Most paths one glob may produce; more would only flood the agent's context. */
const MAX_GLOB_RESULTS = 10_000;

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

/** Expands words into argument strings (several per word after splitting or globbing, or none). */
export function expandWords(words: Word[], env: ExpandEnv): string[] {
  const out: string[] = [];
  for (const word of words) {
    for (const field of splitWord(word, env)) out.push(...globField(field, env));
  }
  return out;
}

/** Expansion without splitting or globbing, as for assignment values. */
export function expandPlain(word: Word, env: ExpandEnv): string {
  let text = "";
  for (const part of word.parts) {
    if (part.kind === "text") text += part.value;
    else if (part.kind === "tilde") text += env.param("HOME") ?? "~";
    else text += env.param(part.name) ?? "";
  }
  return text;
}

function splitWord(word: Word, env: ExpandEnv): Field[] {
  const fields: Field[] = [];
  let cur: Field = { chunks: [], keep: false };
  const finish = (): void => {
    if (cur.keep || cur.chunks.some((c) => c.text !== "")) fields.push(cur);
    cur = { chunks: [], keep: false };
  };
  for (const part of word.parts) {
    if (part.kind === "text") {
      cur.chunks.push({ text: part.value, glob: !part.quoted });
      if (part.quoted) cur.keep = true;
    } else if (part.kind === "tilde") {
      cur.chunks.push({ text: env.param("HOME") ?? "~", glob: false });
    } else {
      const value = env.param(part.name) ?? "";
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

function globField(field: Field, env: ExpandEnv): string[] {
  const literal = field.chunks.map((c) => c.text).join("");
  if (!field.chunks.some((c) => c.glob && hasGlobMeta(c.text))) return [literal];
  const pattern = field.chunks.map((c) => (c.glob ? c.text : escapeGlob(c.text))).join("");
  const matches = expandGlob(pattern, env.fs, env.cwd);
  return matches.length > 0 ? matches : [unescapeGlob(pattern)];
}

function joinDisplay(prefix: string, name: string): string {
  if (prefix === "") return name;
  return prefix.endsWith("/") ? prefix + name : `${prefix}/${name}`;
}

/**
 * Expands a glob pattern against the file system; results are sorted in C order and keep the
 * form typed (relative stays relative). Dot files match only a pattern segment starting with '.'.
 */
export function expandGlob(pattern: string, fs: MemoryFileSystem, cwd: string): string[] {
  const absolute = pattern.startsWith("/");
  const dirOnly = pattern.endsWith("/");
  const segments = pattern.split("/").filter((s) => s !== "");
  let candidates: Array<{ display: string; abs: string }> = [{ display: absolute ? "/" : "", abs: absolute ? "/" : cwd }];
  for (const segment of segments) {
    const next: Array<{ display: string; abs: string }> = [];
    if (!hasGlobMeta(segment)) {
      const name = unescapeGlob(segment);
      for (const c of candidates) next.push({ display: joinDisplay(c.display, name), abs: joinDisplay(c.abs, name) });
    } else {
      const tokens = compileGlob(segment);
      const dotOk = segment.startsWith(".") || segment.startsWith("\\.");
      for (const c of candidates) {
        let names: string[];
        try {
          names = fs.readdir(c.abs);
        } catch (error) {
          if (error instanceof SandboxError) continue;
          throw error;
        }
        for (const name of names) {
          if (name.startsWith(".") && !dotOk) continue;
          if (matchGlob(tokens, name)) next.push({ display: joinDisplay(c.display, name), abs: joinDisplay(c.abs, name) });
          if (next.length > MAX_GLOB_RESULTS) break;
        }
      }
    }
    candidates = next;
    if (candidates.length === 0) return [];
  }
  const results: string[] = [];
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

/**
 * The world of a code-repair episode: the project in an in-memory file system jailed to /project, and a
 * terminal over it. Everything the agent can change is in the file system (and the terminal's cwd/env),
 * so the snapshot is their two snapshots.
 */
import type { JsonValue } from "../../core/json.js";
import { MemoryFileSystem, type FileSystemOptions } from "../../sandboxes/filesystem.js";
import { Terminal } from "../../sandboxes/terminal.js";
import { PROJECT_ROOT, type Task } from "./tasks.js";

export interface World {
  /** The agent's view: jailed to /project. The environment uses `fs.asOwner()`. */
  fs: MemoryFileSystem;
  terminal: Terminal;
}

/** File system limits of the project: generous for a small project, small enough that no write can hurt the host. */
export const FS_OPTIONS: FileSystemOptions = {
  jail: [PROJECT_ROOT],
  maxFileBytes: 256 * 1024,
  maxTotalBytes: 2 * 1024 * 1024,
  maxNodes: 1_000,
};

/** The agent's shell over the project, as a fresh episode starts it. */
export function newTerminal(fs: MemoryFileSystem): Terminal {
  return new Terminal(fs, { cwd: PROJECT_ROOT, env: { HOME: PROJECT_ROOT }, user: "dev", host: "sandbox" });
}

/** The project of a task, as the agent finds it. */
export function createProject(task: Task): World {
  const fs = new MemoryFileSystem(FS_OPTIONS);
  const owner = fs.asOwner();
  owner.mkdir(PROJECT_ROOT, { parents: true });
  for (const path of Object.keys(task.files).sort()) owner.writeFile(`${PROJECT_ROOT}/${path}`, task.files[path]!, { parents: true });
  return { fs, terminal: newTerminal(fs) };
}

/** A path relative to the project root ("src/a.js") for an absolute one inside it. */
export function relativePath(abs: string): string {
  return abs === PROJECT_ROOT ? "." : abs.startsWith(`${PROJECT_ROOT}/`) ? abs.slice(PROJECT_ROOT.length + 1) : abs;
}

/** Every file of the project (owner view) as project-relative path -> content. */
export function projectFiles(fs: MemoryFileSystem): Record<string, string> {
  const owner = fs.asOwner();
  const out: Record<string, string> = {};
  if (!owner.exists(PROJECT_ROOT)) return out;
  for (const abs of owner.walk(PROJECT_ROOT)) {
    if (owner.stat(abs).type === "file") out[relativePath(abs)] = owner.readFile(abs);
  }
  return out;
}

/** The files of a snapshotted world (`snapshotWorld`), as project-relative path -> content. */
export function snapshotFiles(state: JsonValue): Record<string, string> {
  const fs = (state as { fs: { entries: Array<{ path: string; type: string; content?: string }> } }).fs;
  const out: Record<string, string> = {};
  for (const e of fs.entries) if (e.type === "file" && e.path.startsWith(`${PROJECT_ROOT}/`)) out[relativePath(e.path)] = e.content ?? "";
  return out;
}

/**
 * An in-memory POSIX-like file system for agent sandboxes. Nothing here touches the host: paths are
 * strings, files are UTF-8 strings, and every operation is synchronous and deterministic, so a
 * snapshot taken after the same operations is always byte-identical.
 *
 * Two views share one state: the default (agent) view enforces the jail, protections and the access
 * mode; `asOwner()` returns the environment's view, which bypasses all three (it still respects the
 * size limits, which protect the process rather than the task).
 *
 * `restore` holds a snapshot to the same limits as the live tree (file size, total size, node count,
 * path syntax and length, at most MAX_PROTECTIONS distinct protections), so a restored tree never holds
 * what the live one could not; `fileSystemSnapshotSchema` is the zod schema of a snapshot's shape.
 */
import { z } from "zod";
import { SandboxError, ValidationError } from "../core/errors.js";
import type { JsonValue } from "../core/json.js";
import type { AccessMode, Sandbox, SandboxCheckpoint } from "./sandbox.js";

/** Kind of a file system node. */
export type NodeType = "file" | "dir";

/** How a protected tree behaves for the agent: writes refused, or invisible altogether. */
export type Protection = "read-only" | "hidden";

/** Size limits of one file system. */
export interface FileSystemLimits {
  /** Largest single file, in UTF-8 bytes. */
  maxFileBytes: number;
  /** Sum of all file sizes, in UTF-8 bytes. */
  maxTotalBytes: number;
  /** Number of files and directories (the root is not counted). */
  maxNodes: number;
}

/** Constructor options of MemoryFileSystem. */
export interface FileSystemOptions extends Partial<FileSystemLimits> {
  /** Absolute prefixes the agent may reach (e.g. ["/home/agent", "/tmp"]); everything else is a path escape. */
  jail?: string[];
}

/** Result of `stat`. Directories report size 0. */
export interface FileStat {
  type: NodeType;
  size: number;
  /** True when a read-only protection covers the path. */
  readOnly: boolean;
}

/** One entry of a snapshot: a directory, or a file with its content. */
export type SnapshotEntry = { path: string; type: "dir" } | { path: string; type: "file"; content: string };

/** A protection as listed by `protections()` and stored in snapshots. */
export interface ProtectionEntry {
  prefix: string;
  mode: Protection;
}

/** Longest accepted path, in characters (PATH_MAX). */
export const MAX_PATH_LENGTH = 4096;
/** Longest accepted path component, in characters (NAME_MAX). */
export const MAX_NAME_LENGTH = 255;
/** Most protections one file system holds: each path operation checks every one of them. */
export const MAX_PROTECTIONS = 64;
/** Limits used when the constructor does not give one. */
export const DEFAULT_LIMITS: Readonly<FileSystemLimits> = Object.freeze({
  maxFileBytes: 1024 * 1024,
  maxTotalBytes: 16 * 1024 * 1024,
  maxNodes: 10_000,
});

const SNAPSHOT_KIND = "memory-fs";
const SNAPSHOT_VERSION = 1;

interface FileNode {
  type: "file";
  content: string;
  size: number;
}
interface DirNode {
  type: "dir";
  children: Map<string, FsNode>;
}
type FsNode = FileNode | DirNode;

/** State shared by the agent view and the owner view of one file system. */
interface Core {
  root: DirNode;
  totalBytes: number;
  nodeCount: number;
  protections: Map<string, Protection>;
  access: AccessMode;
  readonly limits: FileSystemLimits;
  readonly jail: readonly string[] | null;
}

/** Planned node creation, validated before any state changes so failed calls leave no trace. */
type PlannedNode = { path: string; type: "dir" } | { path: string; type: "file"; content: string; size: number };

const ERROR_TEXT = {
  not_found: "No such file or directory",
  not_a_directory: "Not a directory",
  is_a_directory: "Is a directory",
  already_exists: "File exists",
  directory_not_empty: "Directory not empty",
  permission_denied: "Permission denied",
} as const;

function fsError(code: keyof typeof ERROR_TEXT, path: string): SandboxError {
  return new SandboxError(code, `${path}: ${ERROR_TEXT[code]}`, { path });
}

function newDir(): DirNode {
  return { type: "dir", children: new Map() };
}

/** A copy of a directory tree: new nodes (files are mutated in place), the same content strings. */
function cloneDir(dir: DirNode): DirNode {
  const copy = newDir();
  for (const [name, node] of dir.children) copy.children.set(name, node.type === "dir" ? cloneDir(node) : { ...node });
  return copy;
}

/** C-locale ordering (UTF-16 code units), independent of the host locale. */
function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** True when `path` equals `prefix` or lies below it. */
export function isWithin(path: string, prefix: string): boolean {
  return prefix === "/" || path === prefix || path.startsWith(prefix + "/");
}

/**
 * Normalizes a POSIX path against an absolute cwd. Throws `invalid_path` for malformed input and
 * `path_escape` when '..' would climb above the root (rejected, never clamped, so an agent learns
 * it cannot leave the sandbox instead of silently landing somewhere else).
 */
export function normalizePath(path: string, cwd = "/"): string {
  if (typeof path !== "string") throw new SandboxError("invalid_path", "path must be a string", { reason: "type" });
  if (path === "") throw new SandboxError("invalid_path", "empty path", { path, reason: "empty" });
  if (path.includes("\0")) throw new SandboxError("invalid_path", "path contains a NUL byte", { reason: "nul" });
  if (path.length > MAX_PATH_LENGTH) {
    throw new SandboxError("invalid_path", "path is too long", { reason: "too_long", length: path.length });
  }
  let full = path;
  if (!path.startsWith("/")) {
    if (typeof cwd !== "string" || !cwd.startsWith("/")) {
      throw new SandboxError("invalid_path", "cwd must be an absolute path", { cwd, reason: "relative_cwd" });
    }
    full = `${cwd}/${path}`;
  }
  const stack: string[] = [];
  for (const part of full.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (stack.length === 0) {
        throw new SandboxError("path_escape", `${path}: path leaves the sandbox root`, { path });
      }
      stack.pop();
      continue;
    }
    if (part.includes("\0")) throw new SandboxError("invalid_path", "path contains a NUL byte", { reason: "nul" });
    if (part.length > MAX_NAME_LENGTH) {
      throw new SandboxError("invalid_path", `${path}: file name too long`, { path, reason: "name_too_long" });
    }
    stack.push(part);
  }
  const result = "/" + stack.join("/");
  if (result.length > MAX_PATH_LENGTH) {
    throw new SandboxError("invalid_path", "path is too long", { reason: "too_long", length: result.length });
  }
  return result;
}

function parentOf(abs: string): string {
  const i = abs.lastIndexOf("/");
  return i <= 0 ? "/" : abs.slice(0, i);
}

function baseName(abs: string): string {
  return abs.slice(abs.lastIndexOf("/") + 1);
}

function joinPath(dir: string, name: string): string {
  return dir === "/" ? `/${name}` : `${dir}/${name}`;
}

function checkLimit(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    throw new ValidationError("invalid_config", `${name} must be a non-negative integer`, { [name]: value });
  }
  return value;
}

/** An in-memory POSIX-like file system implementing the Sandbox contract. */
export class MemoryFileSystem implements Sandbox {
  private core!: Core;
  private privileged = false;

  constructor(options: FileSystemOptions = {}) {
    const limits: FileSystemLimits = {
      maxFileBytes: checkLimit(options.maxFileBytes, "maxFileBytes", DEFAULT_LIMITS.maxFileBytes),
      maxTotalBytes: checkLimit(options.maxTotalBytes, "maxTotalBytes", DEFAULT_LIMITS.maxTotalBytes),
      maxNodes: checkLimit(options.maxNodes, "maxNodes", DEFAULT_LIMITS.maxNodes),
    };
    let jail: string[] | null = null;
    if (options.jail !== undefined) {
      if (!Array.isArray(options.jail)) throw new ValidationError("invalid_config", "jail must be an array of paths");
      jail = options.jail.map((prefix) => {
        if (typeof prefix !== "string" || !prefix.startsWith("/")) {
          throw new ValidationError("invalid_config", "jail prefixes must be absolute paths", { prefix });
        }
        return normalizePath(prefix);
      });
    }
    this.core = {
      root: newDir(),
      totalBytes: 0,
      nodeCount: 0,
      protections: new Map(),
      access: "write",
      limits: Object.freeze(limits),
      jail: jail ? Object.freeze(jail) : null,
    };
  }

  // ---------------------------------------------------------------- views, access, configuration

  /** The environment's view of the same state: bypasses jail, protections and access mode. */
  asOwner(): MemoryFileSystem {
    if (this.privileged) return this;
    const view = Object.create(MemoryFileSystem.prototype) as MemoryFileSystem;
    view.core = this.core;
    view.privileged = true;
    return view;
  }

  /** True for the view returned by `asOwner()`. */
  get isOwner(): boolean {
    return this.privileged;
  }

  /** The size limits in force. */
  get limits(): Readonly<FileSystemLimits> {
    return this.core.limits;
  }

  /** The jail prefixes, or null when the whole tree is reachable. */
  get jail(): readonly string[] | null {
    return this.core.jail;
  }

  /** Current usage: total file bytes and node count (root excluded). */
  usage(): { bytes: number; nodes: number } {
    return { bytes: this.core.totalBytes, nodes: this.core.nodeCount };
  }

  /** Sets the access mode shared by all views; in 'read' mode every agent-facing mutation fails. */
  setAccess(mode: AccessMode): void {
    if (mode !== "read" && mode !== "write") {
      throw new ValidationError("invalid_argument", `access mode must be 'read' or 'write'`, { mode });
    }
    this.core.access = mode;
  }

  /** The current access mode. */
  get access(): AccessMode {
    return this.core.access;
  }

  /** Protects a tree for the agent: 'read-only' refuses changes, 'hidden' makes it invisible. */
  protect(prefix: string, mode: Protection): void {
    if (mode !== "read-only" && mode !== "hidden") {
      throw new ValidationError("invalid_argument", `protection must be 'read-only' or 'hidden'`, { mode });
    }
    if (typeof prefix !== "string" || !prefix.startsWith("/")) {
      throw new ValidationError("invalid_argument", "protection prefix must be an absolute path", { prefix });
    }
    const abs = normalizePath(prefix);
    if (!this.core.protections.has(abs) && this.core.protections.size >= MAX_PROTECTIONS) {
      throw new SandboxError("size_limit", `${abs}: too many protections (limit ${MAX_PROTECTIONS})`, { limit: "MAX_PROTECTIONS", max: MAX_PROTECTIONS });
    }
    this.core.protections.set(abs, mode);
  }

  /** Removes the protection set on exactly this prefix (no-op when none). */
  unprotect(prefix: string): void {
    this.core.protections.delete(normalizePath(prefix));
  }

  /** All protections, sorted by prefix. */
  protections(): ProtectionEntry[] {
    return [...this.core.protections]
      .sort(([a], [b]) => byCodeUnit(a, b))
      .map(([prefix, mode]) => ({ prefix, mode }));
  }

  // ---------------------------------------------------------------- paths

  /**
   * Resolves a path against `cwd` to a normalized absolute path, enforcing the jail for the agent
   * view. Throws `invalid_path` or `path_escape`.
   */
  resolve(path: string, cwd = "/"): string {
    const abs = normalizePath(path, cwd);
    const jail = this.core.jail;
    if (!this.privileged && jail && !jail.some((prefix) => isWithin(abs, prefix))) {
      throw new SandboxError("path_escape", `${path}: outside the sandbox`, { path, resolved: abs });
    }
    return abs;
  }

  // ---------------------------------------------------------------- reads

  /** True when the path exists and is visible; throws only for malformed or escaping paths. */
  exists(path: string): boolean {
    const abs = this.resolve(path);
    try {
      return this.visibleNode(abs, path) !== undefined;
    } catch (error) {
      if (error instanceof SandboxError && error.code === "not_a_directory") return false;
      throw error;
    }
  }

  /** Type and size of a node. */
  stat(path: string): FileStat {
    const abs = this.resolve(path);
    const node = this.requireNode(abs, path);
    return {
      type: node.type,
      size: node.type === "file" ? node.size : 0,
      readOnly: this.protectionAt(abs) === "read-only",
    };
  }

  /** Content of a regular file. */
  readFile(path: string): string {
    const abs = this.resolve(path);
    const node = this.requireNode(abs, path);
    if (node.type === "dir") throw fsError("is_a_directory", path);
    return node.content;
  }

  /** Sorted names in a directory (hidden entries omitted for the agent). */
  readdir(path: string): string[] {
    const abs = this.resolve(path);
    const node = this.requireNode(abs, path);
    if (node.type !== "dir") throw fsError("not_a_directory", path);
    return this.visibleChildren(abs, node).map(([name]) => name);
  }

  /** Absolute paths of all visible descendants of a directory, sorted; the directory itself excluded. */
  walk(path: string): string[] {
    const abs = this.resolve(path);
    const node = this.requireNode(abs, path);
    if (node.type !== "dir") throw fsError("not_a_directory", path);
    const out: string[] = [];
    this.collect(abs, node, out);
    return out.sort(byCodeUnit);
  }

  // ---------------------------------------------------------------- writes

  /**
   * Writes (or with `append` appends to) a file. The parent directory must exist unless `parents`
   * is set, in which case missing directories are created like `mkdir -p`.
   */
  writeFile(path: string, content: string, options: { append?: boolean; parents?: boolean } = {}): void {
    if (typeof content !== "string") throw new TypeError("writeFile: content must be a string");
    this.assertWritable(path);
    const abs = this.resolve(path);
    if (abs === "/") throw fsError("is_a_directory", path);
    this.checkCreate(abs, path, options.parents === true);
    const plan = this.planParents(parentOf(abs), path, options.parents === true);
    const existing = plan.length === 0 ? this.rawNode(abs, path) : undefined;
    if (existing?.type === "dir") throw fsError("is_a_directory", path);
    const next = options.append && existing ? existing.content + content : content;
    const size = Buffer.byteLength(next, "utf8");
    this.checkFileSize(size, path);
    this.checkTotals(size - (existing?.size ?? 0), plan.length + (existing ? 0 : 1), path);
    this.applyPlan(plan);
    if (existing) {
      this.core.totalBytes += size - existing.size;
      existing.content = next;
      existing.size = size;
    } else {
      this.insert(abs, { type: "file", content: next, size });
    }
  }

  /** Creates an empty file, or checks that an existing one may be written (no timestamps are kept). */
  touch(path: string): void {
    this.assertWritable(path);
    const abs = this.resolve(path);
    if (!this.visibleNode(abs, path)) {
      this.writeFile(path, "");
      return;
    }
    if (!this.privileged && this.protectionAt(abs) === "read-only") throw fsError("permission_denied", path);
  }

  /** Creates a directory; with `parents`, creates missing ancestors and accepts an existing directory. */
  mkdir(path: string, options: { parents?: boolean } = {}): void {
    this.assertWritable(path);
    const abs = this.resolve(path);
    const parents = options.parents === true;
    if (abs === "/") {
      if (parents) return;
      throw fsError("already_exists", path);
    }
    this.checkCreate(abs, path, parents);
    const plan = this.planParents(abs, path, parents, true);
    if (plan.length === 0) {
      if (parents && this.rawNode(abs, path)?.type === "dir") return;
      throw fsError("already_exists", path);
    }
    this.checkTotals(0, plan.length, path);
    this.applyPlan(plan);
  }

  /** Removes a file or an empty directory; with `recursive`, a whole tree. */
  remove(path: string, options: { recursive?: boolean } = {}): void {
    this.assertWritable(path);
    const abs = this.resolve(path);
    if (abs === "/") throw new SandboxError("permission_denied", `${path}: cannot remove the root directory`, { path });
    const node = this.requireNode(abs, path);
    this.checkDetach(abs, path);
    if (node.type === "dir" && node.children.size > 0 && !options.recursive) {
      throw fsError("directory_not_empty", path);
    }
    this.detach(abs);
  }

  /** Moves a node. Replaces an existing file, or an empty directory with a directory (rename(2) rules). */
  rename(from: string, to: string): void {
    this.assertWritable(from);
    const src = this.resolve(from);
    const dst = this.resolve(to);
    if (src === "/") throw new SandboxError("permission_denied", `${from}: cannot move the root directory`, { path: from });
    const node = this.requireNode(src, from);
    this.checkDetach(src, from);
    if (src === dst) return;
    if (node.type === "dir" && isWithin(dst, src)) {
      throw new SandboxError("invalid_path", `${to}: cannot move a directory into itself`, { from, to });
    }
    this.checkCreate(dst, to, false);
    this.planParents(parentOf(dst), to, false);
    const target = this.rawNode(dst, to);
    if (target) {
      if (node.type === "file" && target.type === "dir") throw fsError("is_a_directory", to);
      if (node.type === "dir" && target.type === "file") throw fsError("not_a_directory", to);
      if (target.type === "dir" && target.children.size > 0) throw fsError("directory_not_empty", to);
      this.detach(dst);
    }
    this.detachNode(src);
    this.attach(dst, node);
  }

  /**
   * Copies a file, or with `recursive` a directory tree. An existing destination file is overwritten;
   * an existing destination directory receives the tree merged into it (like `cp -r src/. dst`).
   * Hidden entries of the source are not copied by the agent view.
   */
  copy(from: string, to: string, options: { recursive?: boolean } = {}): void {
    this.assertWritable(to);
    const src = this.resolve(from);
    const dst = this.resolve(to);
    const node = this.requireNode(src, from);
    if (node.type === "dir" && !options.recursive) throw fsError("is_a_directory", from);
    if (src === dst) {
      throw new SandboxError("invalid_path", `${from}: source and destination are the same`, { from, to });
    }
    if (node.type === "dir" && isWithin(dst, src)) {
      throw new SandboxError("invalid_path", `${to}: cannot copy a directory into itself`, { from, to });
    }
    this.checkCreate(dst, to, false);
    this.planParents(parentOf(dst), to, false);

    // Plan every node first: validation failures must leave the state unchanged.
    const sources: Array<[string, FsNode]> = [[dst, node]];
    if (node.type === "dir") {
      const below: string[] = [];
      this.collect(src, node, below);
      below.sort(byCodeUnit);
      for (const p of below) sources.push([dst + p.slice(src.length), this.rawNode(p, p)!]);
    }
    const creates: PlannedNode[] = [];
    const overwrites: Array<{ target: FileNode; content: string; size: number }> = [];
    let deltaBytes = 0;
    for (const [target, source] of sources) {
      if (target !== dst) this.checkCreate(target, target, false);
      const existing = this.rawNodeQuiet(target);
      if (source.type === "file") {
        if (existing?.type === "dir") throw fsError("is_a_directory", target === dst ? to : target);
        if (existing) {
          overwrites.push({ target: existing, content: source.content, size: source.size });
          deltaBytes += source.size - existing.size;
        } else {
          creates.push({ path: target, type: "file", content: source.content, size: source.size });
          deltaBytes += source.size;
        }
      } else {
        if (existing?.type === "file") throw fsError("not_a_directory", target === dst ? to : target);
        if (!existing) creates.push({ path: target, type: "dir" });
      }
    }
    this.checkTotals(deltaBytes, creates.length, to);
    for (const o of overwrites) {
      this.core.totalBytes += o.size - o.target.size;
      o.target.content = o.content;
      o.target.size = o.size;
    }
    this.applyPlan(creates);
  }

  // ---------------------------------------------------------------- snapshots

  /** A mark of the whole tree (structure copied, contents shared: strings are immutable) to roll back to. */
  checkpoint(): SandboxCheckpoint {
    const saved = { root: cloneDir(this.core.root), totalBytes: this.core.totalBytes, nodeCount: this.core.nodeCount, protections: new Map(this.core.protections) };
    return {
      rollback: () => {
        this.core.root = saved.root;
        this.core.totalBytes = saved.totalBytes;
        this.core.nodeCount = saved.nodeCount;
        this.core.protections = saved.protections;
      },
      release: () => undefined,
    };
  }

  /** Full state (entries and protections), sorted so that equal states give equal canonical JSON. */
  snapshot(): JsonValue {
    const nodes: Array<[string, FsNode]> = [];
    this.collectAll("/", this.core.root, nodes);
    nodes.sort(([a], [b]) => byCodeUnit(a, b));
    const entries = nodes.map(([path, node]): JsonValue =>
      node.type === "dir" ? { path, type: "dir" } : { path, type: "file", content: node.content },
    );
    const protections: JsonValue[] = this.protections().map((p) => ({ prefix: p.prefix, mode: p.mode }));
    return { kind: SNAPSHOT_KIND, version: SNAPSHOT_VERSION, entries, protections };
  }

  /**
   * Replaces all state (entries and protections) with a snapshot; throws `invalid_snapshot` on bad input
   * and on a tree over this file system's limits, naming the limit. A refused snapshot changes nothing.
   */
  restore(snapshot: JsonValue): void {
    const { maxFileBytes, maxTotalBytes, maxNodes } = this.core.limits;
    const counts = snapshotCounts(snapshot);
    // Counted before anything is parsed: an oversized snapshot costs no more than its length.
    if (counts.entries > maxNodes) throw invalidSnapshot(`${counts.entries} entries; the limit is ${maxNodes} (maxNodes)`);
    if (counts.protections > MAX_PROTECTIONS) throw invalidSnapshot(`${counts.protections} protections; the limit is ${MAX_PROTECTIONS} (MAX_PROTECTIONS)`);
    const parsed = parseSnapshot(snapshot);
    const root = newDir();
    let totalBytes = 0;
    let nodeCount = 0;
    const dirs = new Map<string, DirNode>([["/", root]]);
    for (const entry of parsed.entries) {
      const parent = dirs.get(parentOf(entry.path));
      if (!parent) throw invalidSnapshot(`parent of ${entry.path} is missing or not a directory`);
      if (entry.type === "dir") {
        const dir = newDir();
        parent.children.set(baseName(entry.path), dir);
        dirs.set(entry.path, dir);
      } else {
        const size = Buffer.byteLength(entry.content, "utf8");
        if (size > maxFileBytes) throw invalidSnapshot(`${entry.path} is ${size} bytes; the limit is ${maxFileBytes} (maxFileBytes)`);
        parent.children.set(baseName(entry.path), { type: "file", content: entry.content, size });
        totalBytes += size;
      }
      nodeCount += 1;
    }
    if (totalBytes > maxTotalBytes) throw invalidSnapshot(`files of ${totalBytes} bytes in all; the limit is ${maxTotalBytes} (maxTotalBytes)`);
    this.core.root = root;
    this.core.totalBytes = totalBytes;
    this.core.nodeCount = nodeCount;
    this.core.protections = new Map(parsed.protections.map((p) => [p.prefix, p.mode]));
  }

  // ---------------------------------------------------------------- internals: lookup

  /** Node at `abs` ignoring protections; throws not_a_directory when a component is a file. */
  private rawNode(abs: string, display: string): FsNode | undefined {
    if (abs === "/") return this.core.root;
    let node: FsNode = this.core.root;
    const parts = abs.slice(1).split("/");
    for (let i = 0; i < parts.length; i++) {
      if (node.type !== "dir") throw fsError("not_a_directory", display);
      const next = node.children.get(parts[i]);
      if (!next) return undefined;
      node = next;
    }
    return node;
  }

  /** Like rawNode, but a file in the middle of the path just means "absent". */
  private rawNodeQuiet(abs: string): FsNode | undefined {
    try {
      return this.rawNode(abs, abs);
    } catch {
      return undefined;
    }
  }

  /** Node as the current view sees it: hidden trees do not exist for the agent. */
  private visibleNode(abs: string, display: string): FsNode | undefined {
    if (!this.privileged && this.protectionAt(abs) === "hidden") return undefined;
    return this.rawNode(abs, display);
  }

  private requireNode(abs: string, display: string): FsNode {
    const node = this.visibleNode(abs, display);
    if (!node) throw fsError("not_found", display);
    return node;
  }

  private visibleChildren(abs: string, dir: DirNode): Array<[string, FsNode]> {
    const entries = [...dir.children].filter(
      ([name]) => this.privileged || this.protectionAt(joinPath(abs, name)) !== "hidden",
    );
    return entries.sort(([a], [b]) => byCodeUnit(a, b));
  }

  private collect(abs: string, dir: DirNode, out: string[]): void {
    for (const [name, child] of this.visibleChildren(abs, dir)) {
      const p = joinPath(abs, name);
      out.push(p);
      if (child.type === "dir") this.collect(p, child, out);
    }
  }

  private collectAll(abs: string, dir: DirNode, out: Array<[string, FsNode]>): void {
    for (const [name, child] of dir.children) {
      const p = joinPath(abs, name);
      out.push([p, child]);
      if (child.type === "dir") this.collectAll(p, child, out);
    }
  }

  // ---------------------------------------------------------------- internals: permissions

  /** Strongest protection covering a path: 'hidden' wins over 'read-only'. */
  private protectionAt(abs: string): Protection | null {
    let found: Protection | null = null;
    for (const [prefix, mode] of this.core.protections) {
      if (!isWithin(abs, prefix)) continue;
      if (mode === "hidden") return "hidden";
      found = mode;
    }
    return found;
  }

  private assertWritable(display: string): void {
    if (!this.privileged && this.core.access === "read") {
      throw new SandboxError("read_only", `${display}: Read-only file system`, { path: display });
    }
  }

  /**
   * May the agent create or overwrite `abs`? Inside a hidden tree the answer mimics absence
   * (not_found), except where absence would let the call succeed (creating the hidden root itself,
   * or its parents with mkdir -p): those are refused outright.
   */
  private checkCreate(abs: string, display: string, parents: boolean): void {
    if (this.privileged) return;
    const mode = this.protectionAt(abs);
    if (!mode) return;
    if (mode === "hidden" && !parents) {
      for (const [prefix, m] of this.core.protections) {
        if (m === "hidden" && prefix !== abs && isWithin(abs, prefix)) throw fsError("not_found", display);
      }
    }
    throw fsError("permission_denied", display);
  }

  /** May the agent remove or move away the node at `abs` (and everything below it)? */
  private checkDetach(abs: string, display: string): void {
    if (this.privileged) return;
    for (const [prefix] of this.core.protections) {
      if (isWithin(abs, prefix)) throw fsError("permission_denied", display);
      if (isWithin(prefix, abs) && this.rawNodeQuiet(prefix)) throw fsError("permission_denied", display);
    }
  }

  // ---------------------------------------------------------------- internals: limits and mutation

  private checkFileSize(size: number, display: string): void {
    const max = this.core.limits.maxFileBytes;
    if (size > max) {
      throw new SandboxError("size_limit", `${display}: File too large (limit ${max} bytes)`, {
        path: display,
        limit: "maxFileBytes",
        max,
        size,
      });
    }
  }

  private checkTotals(deltaBytes: number, newNodes: number, display: string): void {
    const { maxTotalBytes, maxNodes } = this.core.limits;
    if (this.core.totalBytes + deltaBytes > maxTotalBytes) {
      throw new SandboxError("size_limit", `${display}: No space left on device (limit ${maxTotalBytes} bytes)`, {
        path: display,
        limit: "maxTotalBytes",
        max: maxTotalBytes,
      });
    }
    if (this.core.nodeCount + newNodes > maxNodes) {
      throw new SandboxError("size_limit", `${display}: No space left on device (limit ${maxNodes} files)`, {
        path: display,
        limit: "maxNodes",
        max: maxNodes,
      });
    }
  }

  /**
   * Directories to create so that `dir` exists (outermost first). With `parents` false, only `dir`
   * itself may be missing when `includeSelf` is set, and nothing otherwise.
   */
  private planParents(dir: string, display: string, parents: boolean, includeSelf = false): PlannedNode[] {
    const plan: PlannedNode[] = [];
    const parts = dir === "/" ? [] : dir.slice(1).split("/");
    let node: FsNode | undefined = this.core.root;
    let current = "/";
    for (let i = 0; i < parts.length; i++) {
      current = joinPath(current, parts[i]);
      const isLast = i === parts.length - 1;
      if (node) {
        if (node.type !== "dir") throw fsError("not_a_directory", display);
        node = node.children.get(parts[i]);
      }
      if (!node) {
        if (!parents && !(includeSelf && isLast)) throw fsError("not_found", display);
        plan.push({ path: current, type: "dir" });
      }
    }
    if (node && node.type !== "dir" && !includeSelf) throw fsError("not_a_directory", display);
    return plan;
  }

  private applyPlan(plan: PlannedNode[]): void {
    for (const item of plan) {
      if (item.type === "dir") this.insert(item.path, newDir());
      else this.insert(item.path, { type: "file", content: item.content, size: item.size });
    }
  }

  private insert(abs: string, node: FsNode): void {
    this.attach(abs, node);
    this.core.nodeCount += 1;
    if (node.type === "file") this.core.totalBytes += node.size;
  }

  private attach(abs: string, node: FsNode): void {
    const parent = this.rawNode(parentOf(abs), abs) as DirNode;
    parent.children.set(baseName(abs), node);
  }

  /** Unlinks a node without changing the totals (used by rename). */
  private detachNode(abs: string): FsNode {
    const parent = this.rawNode(parentOf(abs), abs) as DirNode;
    const node = parent.children.get(baseName(abs))!;
    parent.children.delete(baseName(abs));
    return node;
  }

  /** Unlinks a node and subtracts its whole subtree from the totals. */
  private detach(abs: string): void {
    const node = this.detachNode(abs);
    const count = (n: FsNode): void => {
      this.core.nodeCount -= 1;
      if (n.type === "file") this.core.totalBytes -= n.size;
      else for (const child of n.children.values()) count(child);
    };
    count(node);
  }
}

// -------------------------------------------------------------------- snapshot parsing and diff

interface ParsedSnapshot {
  entries: SnapshotEntry[];
  protections: ProtectionEntry[];
}

function invalidSnapshot(reason: string): ValidationError {
  return new ValidationError("invalid_snapshot", `invalid file system snapshot: ${reason}`);
}

/** How many entries and protections a snapshot lists (0 where it lists none: parsing reports the shape). */
function snapshotCounts(snapshot: unknown): { entries: number; protections: number } {
  const length = (value: unknown): number => (Array.isArray(value) ? value.length : 0);
  return isRecord(snapshot) ? { entries: length(snapshot.entries), protections: length(snapshot.protections) } : { entries: 0, protections: 0 };
}

/**
 * The zod schema of exactly what `snapshot()` returns for a file system with these limits (its shape and
 * the limits a schema can see: entry and protection counts, path and file lengths; a file's UTF-8 size is
 * at least its length). `restore` checks the rest: path syntax, parents, UTF-8 and total sizes.
 */
export function fileSystemSnapshotSchema(limits: Partial<FileSystemLimits> = {}) {
  const { maxFileBytes, maxNodes } = { ...DEFAULT_LIMITS, ...limits };
  const path = z.string().min(1).max(MAX_PATH_LENGTH);
  return z.strictObject({
    kind: z.literal(SNAPSHOT_KIND),
    version: z.literal(SNAPSHOT_VERSION),
    entries: z
      .array(
        z.discriminatedUnion("type", [
          z.strictObject({ path, type: z.literal("dir") }),
          z.strictObject({ path, type: z.literal("file"), content: z.string().max(maxFileBytes) }),
        ]),
      )
      .max(maxNodes),
    protections: z.array(z.strictObject({ prefix: path, mode: z.enum(["read-only", "hidden"]) })).max(MAX_PROTECTIONS),
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function validPath(value: unknown): value is string {
  if (typeof value !== "string" || value === "/" || !value.startsWith("/")) return false;
  try {
    return normalizePath(value) === value;
  } catch {
    return false;
  }
}

/** Validates a snapshot's shape; entries come back sorted by path, so parents precede children. */
function parseSnapshot(snapshot: unknown): ParsedSnapshot {
  if (!isRecord(snapshot)) throw invalidSnapshot("not an object");
  if (snapshot.kind !== SNAPSHOT_KIND) throw invalidSnapshot(`kind must be '${SNAPSHOT_KIND}'`);
  if (snapshot.version !== SNAPSHOT_VERSION) throw invalidSnapshot(`unsupported version`);
  if (!Array.isArray(snapshot.entries)) throw invalidSnapshot("entries must be an array");
  if (!Array.isArray(snapshot.protections)) throw invalidSnapshot("protections must be an array");
  const seen = new Set<string>();
  const entries: SnapshotEntry[] = snapshot.entries.map((raw, i) => {
    if (!isRecord(raw) || !validPath(raw.path)) throw invalidSnapshot(`entry ${i} has an invalid path`);
    if (seen.has(raw.path)) throw invalidSnapshot(`duplicate path ${raw.path}`);
    seen.add(raw.path);
    if (raw.type === "dir") return { path: raw.path, type: "dir" };
    if (raw.type === "file" && typeof raw.content === "string") {
      return { path: raw.path, type: "file", content: raw.content };
    }
    throw invalidSnapshot(`entry ${raw.path} has an invalid type or content`);
  });
  entries.sort((a, b) => byCodeUnit(a.path, b.path));
  const prefixes = new Set<string>();
  const protections: ProtectionEntry[] = snapshot.protections.map((raw, i) => {
    if (!isRecord(raw) || (raw.prefix !== "/" && !validPath(raw.prefix))) {
      throw invalidSnapshot(`protection ${i} has an invalid prefix`);
    }
    if (prefixes.has(raw.prefix as string)) throw invalidSnapshot(`duplicate protection ${raw.prefix as string}`);
    prefixes.add(raw.prefix as string);
    if (raw.mode !== "read-only" && raw.mode !== "hidden") throw invalidSnapshot(`protection ${i} has an invalid mode`);
    return { prefix: raw.prefix as string, mode: raw.mode };
  });
  return { entries, protections };
}

/** A changed path in a file system diff; content is null for a directory. */
export interface ModifiedEntry {
  path: string;
  before: string | null;
  after: string | null;
}

/** Difference between two file system states, every list sorted by path. */
export interface FileSystemDiff {
  added: string[];
  removed: string[];
  modified: ModifiedEntry[];
}

function entryMap(source: JsonValue | MemoryFileSystem): Map<string, string | null> {
  const snapshot = source instanceof MemoryFileSystem ? source.asOwner().snapshot() : source;
  const parsed = parseSnapshot(snapshot);
  return new Map(parsed.entries.map((e) => [e.path, e.type === "file" ? e.content : null]));
}

/**
 * Compares two file systems (snapshots or live instances, seen with owner rights so hidden trees
 * count). A path whose content or type changed is `modified`; directories carry null content.
 */
export function diffFileSystems(
  before: JsonValue | MemoryFileSystem,
  after: JsonValue | MemoryFileSystem,
): FileSystemDiff {
  const a = entryMap(before);
  const b = entryMap(after);
  const added: string[] = [];
  const removed: string[] = [];
  const modified: ModifiedEntry[] = [];
  for (const [path, content] of a) {
    if (!b.has(path)) removed.push(path);
    else if (b.get(path) !== content) modified.push({ path, before: content, after: b.get(path) ?? null });
  }
  for (const path of b.keys()) if (!a.has(path)) added.push(path);
  added.sort(byCodeUnit);
  removed.sort(byCodeUnit);
  modified.sort((x, y) => byCodeUnit(x.path, y.path));
  return { added, removed, modified };
}

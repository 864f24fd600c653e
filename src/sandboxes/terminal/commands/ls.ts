/**
 * ls: one entry per line (output is never a terminal), -l long format with a fixed timestamp
 * (the sandbox keeps no times), -a/-A, -R, -d, -r, -S, -F, -h.
 */
import { errorText, parseOptions, quote, resolvePath, type CommandContext, type CommandSpec } from "../context.js";

interface Entry {
  name: string;
  abs: string;
  type: "file" | "dir";
  size: number;
  readOnly: boolean;
}

/** No timestamps exist in the sandbox; long listings show this fixed one. */
const FIXED_DATE = "Jan  1 00:00";

function byName(a: Entry, b: Entry): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function joinDisplay(dir: string, name: string): string {
  return dir.endsWith("/") ? dir + name : `${dir}/${name}`;
}

function humanSize(n: number): string {
  if (n < 1024) return String(n);
  const units = ["K", "M", "G", "T"];
  let v = n;
  let unit = "";
  for (const u of units) {
    v /= 1024;
    unit = u;
    if (v < 1024) break;
  }
  return v < 10 ? `${(Math.ceil(v * 10) / 10).toFixed(1)}${unit}` : `${Math.ceil(v)}${unit}`;
}

function ls(ctx: CommandContext): number {
  const opts = parseOptions(ctx, {
    flags: "aAlR1dFrShtUCxgon",
    long: {
      all: "a",
      "almost-all": "A",
      recursive: "R",
      directory: "d",
      classify: "F",
      reverse: "r",
      "human-readable": "h",
    },
    usageExit: 2,
  });
  if (typeof opts === "number") return opts;
  const long = opts.has("l") || opts.has("g") || opts.has("o") || opts.has("n");
  const showAll = opts.has("a");
  const almostAll = opts.has("A");
  const recursive = opts.has("R");
  const human = opts.has("h");
  const classify = opts.has("F");
  let status = 0;
  let printed = false;

  const statEntry = (name: string, abs: string): Entry => {
    const st = ctx.fs.stat(abs);
    return { name, abs, type: st.type, size: st.size, readOnly: st.readOnly };
  };

  const sortEntries = (entries: Entry[]): Entry[] => {
    const sorted = [...entries].sort(byName);
    if (opts.has("S")) sorted.sort((a, b) => (b.type === "dir" ? 4096 : b.size) - (a.type === "dir" ? 4096 : a.size));
    if (opts.has("r")) sorted.reverse();
    return sorted;
  };

  const linkCount = (entry: Entry): number => {
    if (entry.type !== "dir") return 1;
    try {
      let dirs = 0;
      for (const name of ctx.fs.readdir(entry.abs)) {
        if (ctx.fs.stat(joinDisplay(entry.abs, name)).type === "dir") dirs += 1;
      }
      return 2 + dirs;
    } catch {
      return 2;
    }
  };

  const printEntries = (entries: Entry[], withTotal: boolean): void => {
    if (!long) {
      for (const e of entries) ctx.stdout.write(`${e.name}${classify && e.type === "dir" ? "/" : ""}\n`);
      return;
    }
    const rows = entries.map((e) => {
      const size = e.type === "dir" ? 4096 : e.size;
      const write = e.readOnly ? "-" : "w";
      const mode = e.type === "dir" ? `dr${write}xr-xr-x` : `-r${write}-r--r--`;
      return { e, mode, links: String(linkCount(e)), size: human ? humanSize(size) : String(size) };
    });
    if (withTotal) {
      const blocks = entries.reduce((sum, e) => sum + (e.type === "dir" ? 4 : Math.ceil(e.size / 4096) * 4), 0);
      ctx.stdout.write(`total ${blocks}\n`);
    }
    const linkWidth = Math.max(0, ...rows.map((r) => r.links.length));
    const sizeWidth = Math.max(0, ...rows.map((r) => r.size.length));
    const owner = ctx.shell.user;
    for (const r of rows) {
      const who = opts.has("g") ? owner : opts.has("o") ? owner : `${owner} ${owner}`;
      const name = `${r.e.name}${classify && r.e.type === "dir" ? "/" : ""}`;
      ctx.stdout.write(`${r.mode} ${r.links.padStart(linkWidth)} ${who} ${r.size.padStart(sizeWidth)} ${FIXED_DATE} ${name}\n`);
    }
  };

  const listDirectory = (display: string, abs: string, header: boolean, topLevel: boolean): void => {
    let names: string[];
    try {
      names = ctx.fs.readdir(abs);
    } catch (error) {
      ctx.stderr.write(`ls: cannot open directory ${quote(display)}: ${errorText(error)}\n`);
      status = topLevel ? 2 : Math.max(status, 1);
      return;
    }
    if (printed) ctx.stdout.write("\n");
    if (header) ctx.stdout.write(`${display}:\n`);
    printed = true;
    const entries: Entry[] = [];
    for (const name of names) {
      if (name.startsWith(".") && !showAll && !almostAll) continue;
      try {
        entries.push(statEntry(name, joinDisplay(abs, name)));
      } catch {
        // Vanished or hidden between readdir and stat: skip, as ls does.
      }
    }
    const sorted = sortEntries(entries);
    if (showAll) {
      const parentAbs = abs === "/" ? "/" : abs.slice(0, abs.lastIndexOf("/")) || "/";
      const dots: Entry[] = [{ name: ".", abs, type: "dir", size: 0, readOnly: false }];
      dots.push({ name: "..", abs: parentAbs, type: "dir", size: 0, readOnly: false });
      sorted.unshift(...(opts.has("r") ? dots.reverse() : dots));
    }
    printEntries(sorted, true);
    if (recursive) {
      for (const e of sorted) {
        if (e.type === "dir" && e.name !== "." && e.name !== "..") listDirectory(joinDisplay(display, e.name), e.abs, true, false);
      }
    }
  };

  const operands = opts.operands.length > 0 ? opts.operands : ["."];
  const files: Entry[] = [];
  const dirs: Entry[] = [];
  for (const op of operands) {
    try {
      const entry = statEntry(op, resolvePath(ctx, op));
      if (entry.type === "dir" && !opts.has("d")) dirs.push(entry);
      else files.push(entry);
    } catch (error) {
      ctx.stderr.write(`ls: cannot access ${quote(op)}: ${errorText(error)}\n`);
      status = 2;
    }
  }
  if (files.length > 0) {
    printEntries(sortEntries(files), false);
    printed = true;
  }
  const header = operands.length > 1 || recursive;
  for (const dir of sortEntries(dirs)) listDirectory(dir.name, dir.abs, header, true);
  return status;
}

/** The ls command. */
export const LS_COMMAND: CommandSpec = { name: "ls", run: ls };

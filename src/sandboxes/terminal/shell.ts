/**
 * The Terminal: a deterministic bash-like shell over a MemoryFileSystem. It parses a command
 * line, expands words, wires pipes and redirections through in-memory buffers, and dispatches to
 * the command table. Everything is synchronous and bounded: the command line is capped, every
 * buffer is capped, and no construct can loop.
 */
import { SandboxError, ValidationError } from "../../core/errors.js";
import type { JsonValue } from "../../core/json.js";
import { normalizePath, type MemoryFileSystem } from "../filesystem.js";
import { COMMANDS } from "./commands/index.js";
import { OutputBuffer, errorText, type CommandContext, type ShellState, type Sink } from "./context.js";
import { expandPlain, expandWords, type ExpandEnv } from "./expand.js";
import { ShellSyntaxError, parseCommandLine, type Pipeline, type Script, type SimpleCommand } from "./parser.js";

/** Longest accepted command line, in UTF-8 bytes. */
export const MAX_COMMAND_LINE_BYTES = 64 * 1024;
/** Default cap on stdout (and separately stderr) of one `run`, in UTF-8 bytes. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

/** Constructor options of Terminal. */
export interface TerminalOptions {
  /** Initial working directory (absolute); default "/". */
  cwd?: string;
  /** Environment variables, merged over the defaults (HOME, USER, PATH, ...). */
  env?: Record<string, string>;
  /** User name shown by whoami and ls -l; default "agent". */
  user?: string;
  /** Host name shown by hostname; default "sandbox". */
  host?: string;
  /** Cap on stdout and on stderr of one run, and on each pipe buffer; default 1 MiB. */
  maxOutputBytes?: number;
}

/** The outcome of one command line. */
export interface RunResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/** Shape of `Terminal.snapshot()`: the terminal's own state (the file system snapshots separately). */
export interface TerminalState {
  kind: "terminal";
  version: 1;
  cwd: string;
  env: Record<string, string>;
  lastExitCode: number;
}

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const BIN_DIRS = new Set(["/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin"]);

/** Output redirected to a file: buffered during the command, appended to the file afterwards. */
class FileSink extends OutputBuffer {
  constructor(
    readonly abs: string,
    readonly display: string,
    limit: number,
  ) {
    super(limit);
  }
}

/** The /dev/null sink. */
const DISCARD: Sink = { write: () => undefined };

/** Raised by the `exit` builtin to stop the rest of the command line. */
class ExitSignal {
  constructor(readonly code: number) {}
}

interface StreamSet {
  stdin: string;
  stdout: Sink;
  stderr: Sink;
}

/** A deterministic shell over an in-memory file system. `run` never throws for user errors. */
export class Terminal {
  readonly fs: MemoryFileSystem;
  private cwdPath: string;
  private vars: Map<string, string>;
  private lastExit = 0;
  private readonly user: string;
  private readonly host: string;
  private readonly maxOutput: number;
  private readonly shellState: ShellState;

  constructor(fs: MemoryFileSystem, options: TerminalOptions = {}) {
    this.fs = fs;
    this.user = options.user ?? "agent";
    this.host = options.host ?? "sandbox";
    this.maxOutput = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    if (!Number.isInteger(this.maxOutput) || this.maxOutput < 1) {
      throw new ValidationError("invalid_config", "maxOutputBytes must be a positive integer");
    }
    try {
      this.cwdPath = normalizePath(options.cwd ?? "/");
    } catch {
      throw new ValidationError("invalid_config", "cwd must be a valid absolute path", { cwd: options.cwd });
    }
    const env: Record<string, string> = {
      HOME: `/home/${this.user}`,
      USER: this.user,
      LOGNAME: this.user,
      HOSTNAME: this.host,
      SHELL: "/bin/bash",
      PATH: "/usr/local/bin:/usr/bin:/bin",
      LANG: "C.UTF-8",
      TERM: "dumb",
      ...options.env,
      PWD: this.cwdPath,
    };
    for (const [name, value] of Object.entries(env)) {
      if (!NAME_RE.test(name) || typeof value !== "string") {
        throw new ValidationError("invalid_config", `invalid environment variable ${name}`);
      }
    }
    this.vars = new Map(Object.entries(env));
    const self = this;
    this.shellState = {
      get cwd() {
        return self.cwdPath;
      },
      set cwd(value: string) {
        self.cwdPath = value;
      },
      get env() {
        return self.vars;
      },
      user: this.user,
      host: this.host,
      commandNames: () => [...COMMANDS.keys(), "exit"].sort(),
      isBuiltin: (name) => (name === "exit" ? true : COMMANDS.has(name) ? COMMANDS.get(name)!.builtin === true : null),
    };
  }

  /** Current working directory (absolute). */
  get cwd(): string {
    return this.cwdPath;
  }

  /** A copy of the environment variables. */
  get env(): Record<string, string> {
    return Object.fromEntries(this.vars);
  }

  /** Exit status of the last command line ($?). */
  get lastExitCode(): number {
    return this.lastExit;
  }

  /** Runs one command line (which may hold several commands) and returns its output. */
  run(commandLine: string): RunResult {
    if (typeof commandLine !== "string") throw new TypeError("Terminal.run: commandLine must be a string");
    const stdout = new OutputBuffer(this.maxOutput);
    const stderr = new OutputBuffer(this.maxOutput);
    let status = 0;
    const bytes = Buffer.byteLength(commandLine, "utf8");
    let script: Script | null = null;
    if (bytes > MAX_COMMAND_LINE_BYTES) {
      stderr.write(`bash: command line too long (${bytes} bytes; the limit is ${MAX_COMMAND_LINE_BYTES})\n`);
      status = 2;
    } else {
      try {
        script = parseCommandLine(commandLine);
      } catch (error) {
        if (!(error instanceof ShellSyntaxError)) throw error;
        stderr.write(`${error.message}\n`);
        status = error.exitCode;
      }
    }
    if (script) {
      if (script.length === 0) return { stdout: "", stderr: "", exitCode: this.lastExit };
      try {
        status = this.execScript(script, { stdin: "", stdout, stderr });
      } catch (error) {
        if (!(error instanceof ExitSignal)) throw error;
        status = error.code;
      }
    }
    this.lastExit = status;
    return {
      stdout: stdout.text() + (stdout.truncated ? `\n[stdout truncated: output exceeded ${this.maxOutput} bytes]\n` : ""),
      stderr: stderr.text() + (stderr.truncated ? `\n[stderr truncated: output exceeded ${this.maxOutput} bytes]\n` : ""),
      exitCode: status,
    };
  }

  /** The terminal's own state (cwd, env, $?) as JSON; the file system is snapshotted separately. */
  snapshot(): JsonValue {
    const env: Record<string, string> = {};
    for (const name of [...this.vars.keys()].sort()) env[name] = this.vars.get(name)!;
    const state: TerminalState = { kind: "terminal", version: 1, cwd: this.cwdPath, env, lastExitCode: this.lastExit };
    return { ...state };
  }

  /** Restores state from `snapshot()`; throws ValidationError("invalid_snapshot") on bad input. */
  restore(snapshot: JsonValue): void {
    const bad = (why: string): ValidationError =>
      new ValidationError("invalid_snapshot", `invalid terminal snapshot: ${why}`);
    if (typeof snapshot !== "object" || snapshot === null || Array.isArray(snapshot)) throw bad("not an object");
    const s = snapshot as Record<string, JsonValue>;
    if (s.kind !== "terminal" || s.version !== 1) throw bad("kind/version mismatch");
    if (typeof s.cwd !== "string" || !s.cwd.startsWith("/")) throw bad("cwd must be an absolute path");
    let cwd: string;
    try {
      cwd = normalizePath(s.cwd);
    } catch {
      throw bad("cwd is not a valid path");
    }
    if (cwd !== s.cwd) throw bad("cwd is not normalized");
    if (typeof s.env !== "object" || s.env === null || Array.isArray(s.env)) throw bad("env must be an object");
    const env = new Map<string, string>();
    for (const [name, value] of Object.entries(s.env)) {
      if (!NAME_RE.test(name) || typeof value !== "string") throw bad(`invalid variable ${name}`);
      env.set(name, value);
    }
    const code = s.lastExitCode;
    if (typeof code !== "number" || !Number.isInteger(code) || code < 0 || code > 255) {
      throw bad("lastExitCode must be an integer 0-255");
    }
    this.cwdPath = cwd;
    this.vars = env;
    this.lastExit = code;
  }

  // ------------------------------------------------------------------------------ execution

  private execScript(script: Script, io: StreamSet): number {
    let status = 0;
    for (const list of script) {
      status = this.execPipeline(list.first, io);
      this.lastExit = status;
      for (const { op, pipeline } of list.rest) {
        if ((op === "&&") !== (status === 0)) continue;
        status = this.execPipeline(pipeline, io);
        this.lastExit = status;
      }
    }
    return status;
  }

  private execPipeline(pipeline: Pipeline, io: StreamSet): number {
    const { commands } = pipeline;
    // Every part of a multi-command pipeline runs in a subshell in bash: cd/export there do not stick.
    const saved = commands.length > 1 ? { cwd: this.cwdPath, vars: new Map(this.vars) } : null;
    let input = io.stdin;
    let status = 0;
    for (let k = 0; k < commands.length; k++) {
      const last = k === commands.length - 1;
      const out = last ? io.stdout : new OutputBuffer(this.maxOutput);
      status = this.execSimple(commands[k], { stdin: input, stdout: out, stderr: io.stderr }, commands.length > 1);
      if (!last) {
        const buffer = out as OutputBuffer;
        if (buffer.truncated) io.stderr.write(`bash: pipe output truncated at ${this.maxOutput} bytes\n`);
        input = buffer.text();
      }
    }
    if (saved) {
      this.cwdPath = saved.cwd;
      this.vars = saved.vars;
    }
    return pipeline.negated ? (status === 0 ? 1 : 0) : status;
  }

  private expandEnv(): ExpandEnv {
    return { param: (name) => this.param(name), fs: this.fs, cwd: this.cwdPath };
  }

  private param(name: string): string | undefined {
    switch (name) {
      case "?":
        return String(this.lastExit);
      case "$":
        return "1000";
      case "#":
        return "0";
      case "0":
        return "bash";
      case "-":
        return "hB";
      default:
        if (/^[1-9@*!]$/.test(name)) return "";
        return this.vars.get(name);
    }
  }

  private execSimple(cmd: SimpleCommand, io: StreamSet, inPipeline: boolean): number {
    const env = this.expandEnv();
    const words = expandWords(cmd.words, env);
    const assignments = cmd.assignments.map((a) => [a.name, expandPlain(a.value, env)] as const);

    const redirected = this.openRedirects(cmd, io);
    if (typeof redirected === "number") return redirected;
    const { streams, files } = redirected;

    let status: number;
    if (words.length === 0) {
      for (const [name, value] of assignments) this.vars.set(name, value);
      status = 0;
    } else {
      // NAME=value before a command applies to that command only.
      const previous = assignments.map(([name]) => [name, this.vars.get(name)] as const);
      for (const [name, value] of assignments) this.vars.set(name, value);
      try {
        status = this.dispatch(words[0], words.slice(1), streams, inPipeline);
      } finally {
        for (const [name, value] of previous) {
          if (value === undefined) this.vars.delete(name);
          else this.vars.set(name, value);
        }
      }
    }

    for (const file of files) {
      try {
        this.fs.writeFile(file.abs, file.text(), { append: true });
      } catch (error) {
        io.stderr.write(`bash: ${file.display}: ${errorText(error)}\n`);
        status = 1;
      }
    }
    return status;
  }

  /** Applies redirections left to right; returns an exit status when one fails (bash prints and skips the command). */
  private openRedirects(cmd: SimpleCommand, io: StreamSet): { streams: StreamSet; files: FileSink[] } | number {
    const streams: StreamSet = { ...io };
    const files: FileSink[] = [];
    const env = this.expandEnv();
    for (const r of cmd.redirects) {
      if (r.op === "dup") {
        if (r.fd === 0 || r.source === 0) continue; // input duplication has no effect on in-memory streams
        const source = r.source === 1 ? streams.stdout : streams.stderr;
        if (r.fd === 1) streams.stdout = source;
        else streams.stderr = source;
        continue;
      }
      const targets = expandWords([r.target], env);
      if (targets.length !== 1) {
        io.stderr.write(`bash: ${r.target.raw}: ambiguous redirect\n`);
        return 1;
      }
      const target = targets[0];
      // /dev/null and friends exist even though the sandbox has no /dev: scripts rely on them.
      const device = this.deviceName(target);
      if (device !== null) {
        if (r.op === "<") {
          streams.stdin = device === "stdin" ? io.stdin : "";
          continue;
        }
        const sink = device === "null" ? DISCARD : device === "stderr" ? streams.stderr : streams.stdout;
        if (r.fd === 1 || r.fd === "both") streams.stdout = sink;
        if (r.fd === 2 || r.fd === "both") streams.stderr = sink;
        continue;
      }
      try {
        const abs = this.fs.resolve(target, this.cwdPath);
        if (r.op === "<") {
          streams.stdin = this.fs.readFile(abs);
          continue;
        }
        // '>' truncates at open time, as in bash (so `sort f > f` empties f).
        this.fs.writeFile(abs, "", { append: r.op === ">>" });
        const sink = new FileSink(abs, target, this.fs.limits.maxFileBytes + 1);
        files.push(sink);
        if (r.fd === 1 || r.fd === "both") streams.stdout = sink;
        if (r.fd === 2 || r.fd === "both") streams.stderr = sink;
      } catch (error) {
        io.stderr.write(`bash: ${target}: ${errorText(error)}\n`);
        return 1;
      }
    }
    return { streams, files };
  }

  private deviceName(target: string): "null" | "stdin" | "stdout" | "stderr" | null {
    let abs: string;
    try {
      abs = normalizePath(target, this.cwdPath);
    } catch {
      return null;
    }
    const m = /^\/dev\/(null|stdin|stdout|stderr)$/.exec(abs);
    return m ? (m[1] as "null" | "stdin" | "stdout" | "stderr") : null;
  }

  private dispatch(name: string, args: string[], io: StreamSet, inPipeline: boolean): number {
    if (name === "exit") return this.exit(args, io, inPipeline);
    let spec = COMMANDS.get(name);
    if (!spec && name.includes("/")) {
      const slash = name.lastIndexOf("/");
      const base = name.slice(slash + 1);
      const known = COMMANDS.get(base);
      if (known && BIN_DIRS.has(name.slice(0, slash))) {
        spec = known;
      } else {
        return this.execPath(name, io);
      }
    }
    if (!spec) {
      io.stderr.write(`bash: ${name}: command not found\n`);
      return 127;
    }
    const ctx: CommandContext = {
      name: spec.name,
      args,
      stdin: io.stdin,
      stdout: io.stdout,
      stderr: io.stderr,
      fs: this.fs,
      shell: this.shellState,
    };
    try {
      return spec.run(ctx);
    } catch (error) {
      // A sandbox error escaping a command is still a user-facing failure, never a crash.
      if (!(error instanceof SandboxError)) throw error;
      io.stderr.write(`${spec.name}: ${errorText(error)}\n`);
      return 1;
    }
  }

  /** Running a file by path: nothing is executable in the sandbox. */
  private execPath(name: string, io: StreamSet): number {
    try {
      const stat = this.fs.stat(this.fs.resolve(name, this.cwdPath));
      io.stderr.write(`bash: ${name}: ${stat.type === "dir" ? "Is a directory" : "Permission denied"}\n`);
      return 126;
    } catch (error) {
      io.stderr.write(`bash: ${name}: ${errorText(error)}\n`);
      return error instanceof SandboxError && error.code === "not_found" ? 127 : 126;
    }
  }

  private exit(args: string[], io: StreamSet, inPipeline: boolean): number {
    let code = this.lastExit;
    if (args.length > 1) {
      io.stderr.write("bash: exit: too many arguments\n");
      return 1;
    }
    if (args.length === 1) {
      if (!/^[+-]?\d{1,18}$/.test(args[0])) {
        io.stderr.write(`bash: exit: ${args[0]}: numeric argument required\n`);
        code = 2;
      } else {
        code = ((Number(args[0]) % 256) + 256) % 256;
      }
    }
    if (inPipeline) return code;
    throw new ExitSignal(code);
  }
}

/**
 * The Terminal: a deterministic bash-like shell over a MemoryFileSystem. It parses a command
 * line, expands words, wires pipes and redirections through in-memory buffers, and dispatches to
 * the command table. Everything is synchronous and bounded: the command line is capped, every
 * buffer is capped, no construct can loop, and each command line has a deterministic work budget
 * and size limits (./limits.ts).
 *
 * A command line that reaches a limit stops there: the rest of it does not run, stderr ends with the
 * limit's message, the exit status is 152 (work budget) or 153 (size limit), and RunResult.error
 * holds the typed error so a tool can report a failed call. Commands that finished before the stop
 * keep their effects, as they would in a real shell.
 */
import { SandboxError, ValidationError } from "../../core/errors.js";
import type { JsonValue } from "../../core/json.js";
import { z } from "zod";
import { MAX_PATH_LENGTH, normalizePath, type MemoryFileSystem } from "../filesystem.js";
import { COMMANDS } from "./commands/index.js";
import { OutputBuffer, errorText, type CommandContext, type ShellState, type Sink } from "./context.js";
import { expandPlain, expandWords, type ExpandEnv } from "./expand.js";
import {
  DEFAULT_WORK_BUDGET,
  isCommandLineStop,
  meteredFileSystem,
  MAX_ENVIRONMENT_LENGTH,
  MAX_VARIABLE_LENGTH,
  stopExitCode,
  WorkBudget,
} from "./limits.js";
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
  /** Work units one command line may spend; default DEFAULT_WORK_BUDGET. */
  workBudget?: number;
}

/** The outcome of one command line. */
export interface RunResult {
  stdout: string;
  stderr: string;
  exitCode: number;
  /** The limit that stopped the command line (`budget_exceeded` or `size_limit`), when one did. */
  error?: SandboxError;
}

/** Shape of `Terminal.snapshot()`: the terminal's own state (the file system snapshots separately). */
export interface TerminalState {
  kind: "terminal";
  version: 1;
  cwd: string;
  env: Record<string, string>;
  lastExitCode: number;
}

/**
 * The schema of `Terminal.snapshot()`, for environments' `worldSchema`: exactly the fields a terminal
 * writes, names that are shell names, values within the variable limit (`restore` checks the total too).
 */
export const TERMINAL_STATE_SCHEMA = z.strictObject({
  kind: z.literal("terminal"),
  version: z.literal(1),
  cwd: z.string().min(1).max(MAX_PATH_LENGTH),
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string().max(MAX_VARIABLE_LENGTH)),
  lastExitCode: z.number().int().min(0).max(255),
});

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const BIN_DIRS = new Set(["/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin"]);

/** Output redirected to a file: buffered during the command, appended to the file afterwards. */
class FileSink extends OutputBuffer {
  constructor(
    readonly abs: string,
    readonly display: string,
    limit: number,
    budget: WorkBudget,
  ) {
    super(limit, budget);
  }
}

/** Size a variable takes in the environment: `NAME=value` and a terminator, as in a process environment block. */
function entryLength(name: string, value: string): number {
  return name.length + value.length + 2;
}

/** Why an environment breaks the size limits, or null when it is within them. */
function environmentProblem(env: Map<string, string>): string | null {
  let total = 0;
  for (const [name, value] of env) {
    if (value.length > MAX_VARIABLE_LENGTH) return `variable ${name} is longer than ${MAX_VARIABLE_LENGTH} characters`;
    total += entryLength(name, value);
  }
  return total > MAX_ENVIRONMENT_LENGTH ? `the environment is larger than ${MAX_ENVIRONMENT_LENGTH} characters` : null;
}

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
  /** Size of `vars` as entryLength counts it. */
  private envLength = 0;
  private lastExit = 0;
  private readonly user: string;
  private readonly host: string;
  private readonly maxOutput: number;
  private readonly workLimit: number;
  /** The budget of the command line being run, or of the last one run. */
  private budget: WorkBudget;
  /** The file system as the command line being run uses it: every call charged to `budget`. */
  private runFs: MemoryFileSystem;
  private readonly shellState: ShellState;

  constructor(fs: MemoryFileSystem, options: TerminalOptions = {}) {
    this.fs = fs;
    this.user = options.user ?? "agent";
    this.host = options.host ?? "sandbox";
    this.maxOutput = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    if (!Number.isInteger(this.maxOutput) || this.maxOutput < 1) {
      throw new ValidationError("invalid_config", "maxOutputBytes must be a positive integer");
    }
    this.workLimit = options.workBudget ?? DEFAULT_WORK_BUDGET;
    if (!Number.isSafeInteger(this.workLimit) || this.workLimit < 1) {
      throw new ValidationError("invalid_config", "workBudget must be a positive integer");
    }
    this.budget = new WorkBudget(this.workLimit);
    this.runFs = meteredFileSystem(fs, this.budget);
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
    const problem = environmentProblem(this.vars);
    if (problem) throw new ValidationError("invalid_config", `env: ${problem}`);
    this.envLength = this.measureEnv();
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
      setVar: (name, value) => this.setVar(name, value),
      unsetVar: (name) => this.unsetVar(name),
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

  /**
   * Work units the last command line spent: deterministic, so the same line on the same state always
   * spends the same, and comparable with TerminalOptions.workBudget.
   */
  get lastWork(): number {
    return this.budget.spent;
  }

  /** Exit status of the last command line ($?). */
  get lastExitCode(): number {
    return this.lastExit;
  }

  /** Runs one command line (which may hold several commands) and returns its output. */
  run(commandLine: string): RunResult {
    if (typeof commandLine !== "string") throw new TypeError("Terminal.run: commandLine must be a string");
    const budget = (this.budget = new WorkBudget(this.workLimit));
    this.runFs = meteredFileSystem(this.fs, budget);
    const stdout = new OutputBuffer(this.maxOutput, budget);
    const stderr = new OutputBuffer(this.maxOutput, budget);
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
        if (error instanceof ExitSignal) status = error.code;
        else if (!isCommandLineStop(error)) throw error;
      }
    }
    const stop = budget.stop;
    if (stop) status = stopExitCode(stop);
    this.lastExit = status;
    const result: RunResult = {
      stdout: stdout.text() + (stdout.truncated ? `\n[stdout truncated: output exceeded ${this.maxOutput} bytes]\n` : ""),
      // The stop's message is appended here: written through stderr, it would be charged to the spent budget.
      stderr: stderr.text() + (stderr.truncated ? `\n[stderr truncated: output exceeded ${this.maxOutput} bytes]\n` : "") + (stop ? `${stop.message}\n` : ""),
      exitCode: status,
    };
    if (stop) result.error = stop;
    return result;
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
    const problem = environmentProblem(env);
    if (problem) throw bad(problem);
    const code = s.lastExitCode;
    if (typeof code !== "number" || !Number.isInteger(code) || code < 0 || code > 255) {
      throw bad("lastExitCode must be an integer 0-255");
    }
    this.cwdPath = cwd;
    this.vars = env;
    this.envLength = this.measureEnv();
    this.lastExit = code;
  }

  // ------------------------------------------------------------------------------ variables

  private measureEnv(): number {
    let total = 0;
    for (const [name, value] of this.vars) total += entryLength(name, value);
    return total;
  }

  /** Sets a variable within the size limits (a size_limit stop otherwise). */
  private setVar(name: string, value: string): void {
    const budget = this.budget;
    budget.checkSize(value.length, MAX_VARIABLE_LENGTH, "maxVariableLength", `${name}: value too long`);
    const old = this.vars.get(name);
    const length = this.envLength - (old === undefined ? 0 : entryLength(name, old)) + entryLength(name, value);
    budget.checkSize(length, MAX_ENVIRONMENT_LENGTH, "maxEnvironmentLength", "environment too large");
    this.vars.set(name, value);
    this.envLength = length;
  }

  private unsetVar(name: string): void {
    const old = this.vars.get(name);
    if (old === undefined) return;
    this.vars.delete(name);
    this.envLength -= entryLength(name, old);
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
    const subshells = commands.length > 1;
    // Every part of a multi-command pipeline runs in its own subshell in bash: cd/export there do not stick.
    const parent = { cwd: this.cwdPath, vars: this.vars, envLength: this.envLength };
    let input = io.stdin;
    let status = 0;
    try {
      for (let k = 0; k < commands.length; k++) {
        const last = k === commands.length - 1;
        if (subshells) this.enterSubshell(parent);
        const out = last ? io.stdout : new OutputBuffer(this.maxOutput, this.budget);
        status = this.execSimple(commands[k], { stdin: input, stdout: out, stderr: io.stderr }, subshells);
        if (!last) {
          const buffer = out as OutputBuffer;
          if (buffer.truncated) io.stderr.write(`bash: pipe output truncated at ${this.maxOutput} bytes\n`);
          input = buffer.text();
        }
      }
    } finally {
      // Also when a limit stops the line inside the pipeline: a subshell's changes never leak out.
      if (subshells) {
        this.cwdPath = parent.cwd;
        this.vars = parent.vars;
        this.envLength = parent.envLength;
      }
    }
    return pipeline.negated ? (status === 0 ? 1 : 0) : status;
  }

  /** Starts a subshell: a copy of the parent's state (charged: copying the environment is work). */
  private enterSubshell(parent: { cwd: string; vars: Map<string, string>; envLength: number }): void {
    this.budget.charge(parent.vars.size);
    this.cwdPath = parent.cwd;
    this.vars = new Map(parent.vars);
    this.envLength = parent.envLength;
  }

  private expandEnv(): ExpandEnv {
    return { param: (name) => this.param(name), fs: this.fs, cwd: this.cwdPath, budget: this.budget };
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
      for (const [name, value] of assignments) this.setVar(name, value);
      status = 0;
    } else {
      // NAME=value before a command applies to that command only.
      const previous = assignments.map(([name]) => [name, this.vars.get(name)] as const);
      for (const [name, value] of assignments) this.setVar(name, value);
      try {
        status = this.dispatch(words[0], words.slice(1), streams, inPipeline);
      } finally {
        for (const [name, value] of previous) {
          if (value === undefined) this.unsetVar(name);
          else this.setVar(name, value);
        }
      }
    }

    for (const file of files) {
      try {
        this.runFs.writeFile(file.abs, file.text(), { append: true });
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
        const discard: Sink = { write: (text) => this.budget.charge(text.length) };
        const sink = device === "null" ? discard : device === "stderr" ? streams.stderr : streams.stdout;
        if (r.fd === 1 || r.fd === "both") streams.stdout = sink;
        if (r.fd === 2 || r.fd === "both") streams.stderr = sink;
        continue;
      }
      try {
        const abs = this.runFs.resolve(target, this.cwdPath);
        if (r.op === "<") {
          streams.stdin = this.runFs.readFile(abs);
          continue;
        }
        // '>' truncates at open time, as in bash (so `sort f > f` empties f).
        this.runFs.writeFile(abs, "", { append: r.op === ">>" });
        const sink = new FileSink(abs, target, this.fs.limits.maxFileBytes + 1, this.budget);
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
      fs: this.runFs,
      shell: this.shellState,
      budget: this.budget,
    };
    let status: number;
    this.budget.command = spec.name;
    try {
      status = spec.run(ctx);
    } catch (error) {
      // A sandbox error escaping a command is still a user-facing failure, never a crash; a stop ends the line.
      if (!(error instanceof SandboxError) || isCommandLineStop(error)) throw error;
      io.stderr.write(`${spec.name}: ${errorText(error)}\n`);
      status = 1;
    } finally {
      this.budget.command = "bash";
    }
    // A command that caught its stop by mistake still ends the line.
    if (this.budget.stop) throw this.budget.stop;
    return status;
  }

  /** Running a file by path: nothing is executable in the sandbox. */
  private execPath(name: string, io: StreamSet): number {
    try {
      const stat = this.runFs.stat(this.runFs.resolve(name, this.cwdPath));
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

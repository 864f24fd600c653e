/**
 * Bounded work for the sandbox shell (DESIGN §7: every sandbox primitive an agent reaches has a
 * deterministic work budget and size limits).
 *
 * Work budget: each `Terminal.run` (one command line) gets a WorkBudget, and everything whose cost
 * grows with agent input charges it in units of roughly one elementary step (about 20 ns here): one
 * character read, written or expanded; one regex VM thread-step per character; one glob comparison.
 * Dearer steps are weighted by what they cost relative to that: a sort comparison, a file-system call
 * (path resolution and protection checks), a directory entry listed. Units count work, never time, so
 * the same command line on the same files always spends the same units and stops at the same point.
 *
 * Size limits bound what a command line may hold rather than what it may do: variable values, the
 * whole environment, the words of a command after expansion, printf field widths, glob results.
 *
 * Either kind of stop is a SandboxError (`budget_exceeded` or `size_limit`) whose message is the
 * agent-facing stderr line. The first stop is recorded in the budget, so a command that catches it
 * by mistake cannot keep working: the next charge throws it again and the shell ends the line.
 */
import { SandboxError } from "../../core/errors.js";
import type { MemoryFileSystem } from "../filesystem.js";

/**
 * Default work units per command line. The built-in environments' reference solvers spend at most
 * 0.3 M units on a command line and their probes at most 1.3 M (a grep -o over every log). The dearest
 * work per unit measured (grep -c over 3,000 tiny files; case-insensitive bracket expressions over
 * Greek text) runs at 45-50 M units per CPU-second on the 2-core development machine, so a command
 * line that spends the whole budget stops after about 0.2 s of CPU.
 */
export const DEFAULT_WORK_BUDGET = 10_000_000;

/**
 * Longest value of one shell variable, in characters: half of Linux's MAX_ARG_STRLEN (the longest
 * string a real program can receive). Values only grow this large by self-concatenation.
 */
export const MAX_VARIABLE_LENGTH = 64 * 1024;
/** Largest environment, in characters, each variable counted as `NAME=value` plus a terminator. */
export const MAX_ENVIRONMENT_LENGTH = 256 * 1024;
/** Most characters one expansion may produce: the words of a command, or one assignment value or redirection target. */
export const MAX_EXPANDED_LENGTH = 256 * 1024;
/** Widest printf field width or precision; more could only be cut by the output cap. */
export const MAX_FORMAT_WIDTH = 64 * 1024;
/** Most paths one glob may expand to; more would only flood the agent's context. */
export const MAX_GLOB_RESULTS = 10_000;

/** Units per file-system call (stat, readdir, readFile, writeFile, ...): each resolves a path and checks protections. */
export const FS_CALL_COST = 200;
/** Units per entry a directory listing returns (each is checked for visibility and sorted). */
export const FS_ENTRY_COST = 50;
/** Units per line split out of a text (each becomes a string of its own). */
export const LINE_COST = 4;
/** Units per comparison of a sort (a comparator call from the engine's sort). */
export const SORT_COMPARISON_COST = 4;

/** Exit status of a command line stopped by the work budget (bash's status for SIGXCPU, the CPU-time limit). */
export const EXIT_BUDGET_EXCEEDED = 152;
/** Exit status of a command line stopped by a size limit (bash's status for SIGXFSZ, the file-size limit). */
export const EXIT_SIZE_LIMIT = 153;

/** Something work can be charged to. */
export interface WorkMeter {
  /** Adds `units` of work; throws SandboxError("budget_exceeded") once the budget is spent. */
  charge(units: number): void;
}

/** A meter that counts nothing (for callers outside a command line, such as unit tests of the regex engine). */
export const UNMETERED: WorkMeter = { charge: () => undefined };

/** Errors that stopped a command line (recorded by identity, so a look-alike error never counts). */
const STOPS = new WeakSet<SandboxError>();

/** True for an error a WorkBudget raised to stop its command line. */
export function isCommandLineStop(error: unknown): boolean {
  return error instanceof SandboxError && STOPS.has(error);
}

/**
 * The file system as commands see it: the same object, but every call is charged FS_CALL_COST and
 * every listing FS_ENTRY_COST per entry, so a command looping over operands or a tree pays for it.
 */
export function meteredFileSystem(fs: MemoryFileSystem, meter: WorkMeter): MemoryFileSystem {
  return new Proxy(fs, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]): unknown => {
        meter.charge(FS_CALL_COST);
        const result: unknown = value.apply(target, args);
        if (Array.isArray(result)) meter.charge(result.length * FS_ENTRY_COST);
        return result;
      };
    },
  });
}

/** Commands whose cost an agent controls mostly through a pattern. */
const PATTERN_COMMANDS = new Set(["grep", "find"]);

/** The work budget of one command line, and the record of the limit that stopped it (if any). */
export class WorkBudget implements WorkMeter {
  private units = 0;
  private stopError: SandboxError | null = null;
  /** The command doing the work, named in the error ("bash" while the shell itself expands words). */
  command = "bash";

  constructor(readonly limit: number = DEFAULT_WORK_BUDGET) {}

  /** Units spent so far. */
  get spent(): number {
    return this.units;
  }

  /** The error that stopped this command line, or null while it may go on. */
  get stop(): SandboxError | null {
    return this.stopError;
  }

  /** Adds work; throws (and records) budget_exceeded when the total passes the limit. */
  charge(units: number): void {
    if (this.stopError) throw this.stopError;
    this.units += units;
    if (this.units > this.limit) {
      const hint = PATTERN_COMMANDS.has(this.command) ? "simplify the pattern or narrow the input" : "narrow the input or split the command line";
      this.halt(
        new SandboxError("budget_exceeded", `${this.prefix()}work budget exceeded (${this.limit} units per command line; ${hint})`, {
          limit: "workBudget",
          max: this.limit,
          command: this.command,
        }),
      );
    }
  }

  /** Refuses (throws and records size_limit) when `size` is above `max`; `what` describes the oversized thing. */
  checkSize(size: number, max: number, limit: string, what: string): void {
    if (size > max) this.refuse(limit, `${what} (${size} characters; the limit is ${max})`, { max, size });
  }

  /** Stops the command line with size_limit; `limit` names the limit, `message` follows the command's name. */
  refuse(limit: string, message: string, details: Record<string, unknown> = {}): never {
    return this.halt(new SandboxError("size_limit", `${this.prefix()}${message}`, { limit, ...details, command: this.command }));
  }

  /** Records a limit error as the stop of this command line and throws it. */
  private halt(error: SandboxError): never {
    if (!this.stopError) {
      this.stopError = error;
      STOPS.add(error);
    }
    throw this.stopError;
  }

  private prefix(): string {
    return this.command === "bash" ? "bash: " : `bash: ${this.command}: `;
  }
}

/** The exit status a command line ends with when `error` stopped it. */
export function stopExitCode(error: SandboxError): number {
  return error.code === "budget_exceeded" ? EXIT_BUDGET_EXCEEDED : EXIT_SIZE_LIMIT;
}

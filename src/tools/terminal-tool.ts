/**
 * A generic `terminal` tool over the sandbox shell (src/sandboxes/terminal): one declaration any
 * environment can reuse. The agent sends `{command: "grep -c Failed /var/log/auth.log"}`; the tool runs
 * it on the episode's Terminal and returns `{exit_code, stdout, stderr}` with each stream cut at a
 * character budget, so one careless `cat` cannot flood the context window. The observation shows the
 * result as a shell user would see it (`renderTerminalOutput`), not as JSON.
 *
 * Usage: `const terminal = terminalTool<World, Task>({ terminal: (world) => world.terminal });`
 *
 * Shell syntax errors, unknown commands and sandbox refusals (paths outside the sandbox, read-only
 * trees, full files) are ordinary results with a non-zero exit code and a message on stderr, exactly
 * as a real shell reports them; only a command the schema refuses (empty, too long) is `invalid`.
 * A command line the shell stopped at one of its own limits (its work budget, or a size limit on
 * variables, expansions or printf widths) is a failed call instead: status `error`, with the limit's
 * code (`budget_exceeded`, `size_limit`) and its message naming the limit as the whole output.
 */
import { z } from "zod";
import type { JsonValue } from "../core/json.js";
import type { Terminal, RunResult } from "../sandboxes/terminal.js";
import { toolsFor, type PermissionDecision, type Tool, type ToolContext } from "./define.js";
import type { FailureProfile, LatencyModel } from "./profile.js";

/** Default longest command, in characters: far above any real one-liner, far below the shell's 64 KiB cap. */
export const DEFAULT_MAX_COMMAND_LENGTH = 4096;
/** Default budget per output stream (stdout, stderr), in characters. */
export const DEFAULT_MAX_OUTPUT_CHARS = 16_000;

/** What a terminal call returns. `truncated` is present (true) only when a stream was cut. */
export interface TerminalOutput {
  exit_code: number;
  stdout: string;
  stderr: string;
  truncated?: true;
}

/** Options of `terminalTool`. Only `terminal` is required. */
export interface TerminalToolOptions<World, Task> {
  /** Tool name. Default "terminal". */
  name?: string;
  /** Tool description shown to the model. Default: a generic one naming the limits. */
  description?: string;
  /** The episode's terminal (usually a field of the world). */
  terminal: (world: World, ctx: ToolContext<World, Task>) => Terminal;
  /** `read` runs commands with read-only sandbox access (every write fails); `write` lets them change files. Default "write". */
  effect?: "read" | "write";
  /** Longest accepted command, in characters (longer ones are `invalid`). Default 4096. */
  maxCommandLength?: number;
  /** Characters kept of stdout and of stderr each; the rest is replaced by a note. Default 16000. */
  maxOutputChars?: number;
  /** Permission the episode must grant. Default none. */
  permission?: string;
  /** Refuse a command before it runs (status `denied`), e.g. one that would modify evidence. */
  authorize?: (command: string, ctx: ToolContext<World, Task>) => PermissionDecision;
  /** Called after every command that ran, e.g. to record process penalties. */
  onRun?: (command: string, result: RunResult, ctx: ToolContext<World, Task>) => void;
  /** Virtual latency per call. Default fixed 20 ms. */
  latency?: LatencyModel;
  /** Injected failures. Default none. */
  failures?: FailureProfile;
  /** Cost per call. Default 0. */
  cost?: number;
}

/** Builds the input schema: strict, so a misspelled or extra argument is `invalid`, never silently dropped. */
function terminalInput(maxLength: number) {
  return z.strictObject({
    command: z.string().min(1).max(maxLength).describe("The command line to run, e.g. grep -c 'Failed password' /var/log/auth.log"),
  });
}
/** The terminal tool's input schema type. */
export type TerminalInput = ReturnType<typeof terminalInput>;

/** Cut `text` to `max` characters, saying how much was dropped and how to see less. */
export function truncateOutput(text: string, max: number): { text: string; truncated: boolean } {
  if (text.length <= max) return { text, truncated: false };
  // Cut at a line end when one is near, so the agent never sees half a log line as if it were whole.
  const cut = text.lastIndexOf("\n", max);
  const end = cut >= max * 0.8 ? cut + 1 : max;
  const dropped = text.length - end;
  return { text: `${text.slice(0, end)}\n[output truncated: ${dropped} more characters; narrow it with grep, head, tail or wc]\n`, truncated: true };
}

/** Declare a terminal tool over the episode's Terminal. */
export function terminalTool<World, Task>(options: TerminalToolOptions<World, Task>): Tool<TerminalInput, World, Task> {
  const maxLength = options.maxCommandLength ?? DEFAULT_MAX_COMMAND_LENGTH;
  const maxOutput = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  const authorize = options.authorize;
  const onRun = options.onRun;
  const defineTool = toolsFor<World, Task>();
  return defineTool({
    name: options.name ?? "terminal",
    description:
      options.description ??
      `Run a bash command line in the sandbox shell (pipes, redirections, &&, ||, ;, globs, quoting; common tools: ls, cat, head, tail, grep, awk, find, wc, sort, uniq, cut, echo). No network, no command substitution. Returns exit_code, stdout and stderr; each stream is cut after ${maxOutput} characters.`,
    input: terminalInput(maxLength),
    effect: options.effect ?? "write",
    ...(options.permission !== undefined ? { permission: options.permission } : {}),
    ...(authorize ? { authorize: (args: { command: string }, ctx: ToolContext<World, Task>) => authorize(args.command, ctx) } : {}),
    latency: options.latency ?? { kind: "fixed", ms: 20 },
    ...(options.failures ? { failures: options.failures } : {}),
    ...(options.cost !== undefined ? { cost: options.cost } : {}),
    handler: ({ command }, ctx): JsonValue => {
      const result = options.terminal(ctx.world, ctx).run(command);
      onRun?.(command, result, ctx);
      if (result.error) throw result.error;
      const stdout = truncateOutput(result.stdout, maxOutput);
      const stderr = truncateOutput(result.stderr, maxOutput);
      const out: TerminalOutput = { exit_code: result.exitCode, stdout: stdout.text, stderr: stderr.text };
      if (stdout.truncated || stderr.truncated) out.truncated = true;
      return out as unknown as JsonValue;
    },
    render: renderTerminalOutput,
  });
}

/** True for a value shaped like a TerminalOutput. */
export function isTerminalOutput(value: unknown): value is TerminalOutput {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return typeof v.exit_code === "number" && typeof v.stdout === "string" && typeof v.stderr === "string";
}

/** A terminal result as the text a shell user would see: stdout, then stderr, then a non-zero exit status. */
export function renderTerminalOutput(output: unknown): string {
  if (!isTerminalOutput(output)) return typeof output === "string" ? output : JSON.stringify(output);
  let text = output.stdout;
  if (output.stderr) text += (text && !text.endsWith("\n") ? "\n" : "") + output.stderr;
  if (output.exit_code !== 0) text += `${text && !text.endsWith("\n") ? "\n" : ""}[exit ${output.exit_code}]`;
  return text === "" ? "(no output)" : text.replace(/\n$/, "");
}

/** Public surface of the sandbox shell. */
export {
  DEFAULT_MAX_OUTPUT_BYTES,
  MAX_COMMAND_LINE_BYTES,
  Terminal,
  type RunResult,
  type TerminalOptions,
  type TerminalState,
} from "./shell.js";
export { ShellSyntaxError, parseCommandLine, type Script } from "./parser.js";
export { compilePatterns, RegexSyntaxError, type PatternOptions } from "./regex.js";
export { matchGlob } from "./glob.js";

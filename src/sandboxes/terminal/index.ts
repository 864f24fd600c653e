/** Public surface of the sandbox shell. */
export {
  DEFAULT_MAX_OUTPUT_BYTES,
  MAX_COMMAND_LINE_BYTES,
  Terminal,
  TERMINAL_STATE_SCHEMA,
  type RunResult,
  type TerminalOptions,
  type TerminalState,
} from "./shell.js";
export { ShellSyntaxError, parseCommandLine, type Script } from "./parser.js";
export { compilePatterns, RegexSyntaxError, RegexTooBigError, type PatternOptions } from "./regex.js";
export {
  DEFAULT_WORK_BUDGET,
  MAX_ENVIRONMENT_LENGTH,
  MAX_EXPANDED_LENGTH,
  MAX_FORMAT_WIDTH,
  MAX_GLOB_RESULTS,
  MAX_VARIABLE_LENGTH,
  WorkBudget,
} from "./limits.js";
export { matchGlob } from "./glob.js";

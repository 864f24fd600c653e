/** The command table of the sandbox shell, keyed by command name. */
import type { CommandSpec } from "../context.js";
import { AWK_COMMAND } from "./awk.js";
import { BUILTIN_COMMANDS } from "./builtins.js";
import { FILE_COMMANDS } from "./files.js";
import { FIND_COMMAND } from "./find.js";
import { GREP_COMMAND } from "./grep.js";
import { LS_COMMAND } from "./ls.js";
import { TEXT_COMMANDS } from "./text.js";

/** Every command the terminal knows (the `exit` builtin is handled by the shell itself). */
export const COMMANDS: ReadonlyMap<string, CommandSpec> = new Map(
  [...BUILTIN_COMMANDS, LS_COMMAND, ...FILE_COMMANDS, ...TEXT_COMMANDS, GREP_COMMAND, FIND_COMMAND, AWK_COMMAND].map((spec) => [
    spec.name,
    spec,
  ]),
);

/**
 * The code-repair world as a snapshot: its exact shape (`worldSchema`) and what must hold before a
 * restored world may run (`restoreWorld`). Everything the agent can change is in the file system, so a
 * snapshot is refused with invalid_snapshot unless its tree is one the agent could have made:
 *
 * - within the project's limits (file size, total size, node count: `MemoryFileSystem.restore`);
 * - inside the project: the agent's file system is jailed to /project and the environment writes nothing
 *   else, so no entry lies outside it and nothing is protected;
 * - with the terminal's working directory inside the project too (cd cannot leave the jail; the directory
 *   itself may be gone, as after `rm -r` of the directory the shell is in).
 */
import { z } from "zod";
import { ValidationError } from "../../core/errors.js";
import type { JsonValue } from "../../core/json.js";
import { fileSystemSnapshotSchema, isWithin, MemoryFileSystem } from "../../sandboxes/filesystem.js";
import { PROJECT_ROOT } from "./tasks.js";
import { FS_OPTIONS, newTerminal, type World } from "./world.js";
import { TERMINAL_STATE_SCHEMA } from "../../sandboxes/terminal.js";


/** The schema of `snapshotWorld` output. */
export const WORLD_SCHEMA = z.strictObject({ fs: fileSystemSnapshotSchema(FS_OPTIONS), terminal: TERMINAL_STATE_SCHEMA });

/** The world as JSON. */
export function snapshotWorld(world: World): JsonValue {
  return { fs: world.fs.asOwner().snapshot(), terminal: world.terminal.snapshot() };
}

/** Rebuild a world from `snapshotWorld` output that WORLD_SCHEMA accepted, refusing a tree the agent could not have made. */
export function restoreWorld(state: JsonValue): World {
  const s = state as unknown as z.infer<typeof WORLD_SCHEMA>;
  const outside = s.fs.entries.find((e) => !isWithin(e.path, PROJECT_ROOT));
  if (outside) throw invalid(`fs entry ${outside.path} lies outside the project ${PROJECT_ROOT}`);
  if (s.fs.protections.length > 0) throw invalid("fs.protections: nothing in the project is protected");
  if (!isWithin(s.terminal.cwd, PROJECT_ROOT)) throw invalid(`terminal.cwd ${s.terminal.cwd} lies outside the project ${PROJECT_ROOT}`);
  const fs = new MemoryFileSystem(FS_OPTIONS);
  fs.restore(s.fs as unknown as JsonValue);
  const terminal = newTerminal(fs);
  terminal.restore(s.terminal as unknown as JsonValue);
  return { fs, terminal };
}

function invalid(message: string): ValidationError {
  return new ValidationError("invalid_snapshot", `invalid code-repair world: ${message}`);
}

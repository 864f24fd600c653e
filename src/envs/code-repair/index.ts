/** The code-repair environment: registry entry and public API. */
import { entryFor } from "../../core/registry.js";
import { CodeRepair } from "./env.js";

export { CodeRepair, type CodeRepairOptions } from "./env.js";
export { generateCodeRepairTask, codeRepairTasks, DIFFICULTIES, VARIANTS, SIZE, PROJECT_ROOT, type Task, type TestCase, type BugRecord, type Variant } from "./tasks.js";
export { LIBRARY, MODULES, BUG_KINDS, type FnSpec, type BugSpec } from "./library.js";
export { parsePatch, applyFilePatch, unifiedDiff } from "./patch.js";

export const codeRepairEntry = entryFor(CodeRepair);
export default codeRepairEntry;

/** The incident-response environment: registry entry and public API. */
import { entryFor } from "../../core/registry.js";
import { IncidentResponse } from "./env.js";

export { IncidentResponse, renderRunbook, type IncidentResponseOptions } from "./env.js";
export { generateIncidentTask, incidentTasks, FAMILIES, VARIANTS, DIFFICULTIES, TECHNIQUES, RULES, type Task, type Family, type Variant, type Technique } from "./tasks.js";
export { outcomeVerifier, containmentChanges } from "./verifier.js";
export { VIOLATION_RULES, type ViolationRule } from "./world.js";

export const incidentResponseEntry = entryFor(IncidentResponse);
export default incidentResponseEntry;

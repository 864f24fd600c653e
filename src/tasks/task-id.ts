/**
 * Task ids: `family/difficulty/seed-N`, e.g. `billing-dispute/hard/seed-771` (DESIGN §4). The id alone
 * determines the task's content; the episode seed given to `reset` determines everything else.
 */
import { ValidationError } from "../core/errors.js";

/** A parsed task id. */
export interface TaskId {
  family: string;
  difficulty: string;
  index: number;
  /** The canonical string form. */
  id: string;
}

const SEGMENT = /^[a-z0-9][a-z0-9_-]*$/;
const SEED = /^seed-(0|[1-9][0-9]*)$/;

/** What a parser checks segments against; omitted lists accept any well-formed segment. */
export interface TaskIdRules {
  families?: readonly string[];
  difficulties?: readonly string[];
}

/** Parse and validate a task id; errors name the part that is wrong and the valid choices. */
export function parseTaskId(raw: unknown, rules: TaskIdRules = {}): TaskId {
  if (typeof raw !== "string") {
    throw new ValidationError("invalid_task_id", `task id must be a string like "family/difficulty/seed-N", got ${typeof raw}`);
  }
  const parts = raw.split("/");
  if (parts.length !== 3) {
    throw new ValidationError("invalid_task_id", `task id "${clip(raw)}" must have three parts: family/difficulty/seed-N`, { task_id: clip(raw) });
  }
  const [family, difficulty, seedPart] = parts as [string, string, string];
  if (!SEGMENT.test(family)) {
    throw new ValidationError("invalid_task_id", `task id "${clip(raw)}": family "${clip(family)}" must be lowercase letters, digits, "-" or "_"`);
  }
  if (rules.families && !rules.families.includes(family)) {
    throw new ValidationError("invalid_task_id", `task id "${clip(raw)}": unknown family "${clip(family)}"; valid: ${rules.families.join(", ")}`, { valid: [...rules.families] });
  }
  if (!SEGMENT.test(difficulty)) {
    throw new ValidationError("invalid_task_id", `task id "${clip(raw)}": difficulty "${clip(difficulty)}" is malformed`);
  }
  if (rules.difficulties && !rules.difficulties.includes(difficulty)) {
    throw new ValidationError("invalid_task_id", `task id "${clip(raw)}": unknown difficulty "${clip(difficulty)}"; valid: ${rules.difficulties.join(", ")}`, { valid: [...rules.difficulties] });
  }
  const match = SEED.exec(seedPart);
  const index = match ? Number(match[1]) : Number.NaN;
  if (!match || !Number.isSafeInteger(index)) {
    throw new ValidationError("invalid_task_id", `task id "${clip(raw)}": last part must be "seed-N" with N a non-negative integer, got "${clip(seedPart)}"`);
  }
  return { family, difficulty, index, id: formatTaskId(family, difficulty, index) };
}

/** The canonical id string. */
export function formatTaskId(family: string, difficulty: string, index: number): string {
  return `${family}/${difficulty}/seed-${index}`;
}

function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/**
 * Typed errors with stable codes. The library, the service and the CLI all report failures through
 * these classes, so a code seen in a log, an HTTP body or a CLI message means the same thing everywhere.
 */

/** Every stable error code LLMix emits. Codes are part of the public contract: never rename one. */
export const ERROR_CODES = {
  invalid_action: "The action is not a valid tool_call or message action.",
  invalid_argument: "An argument failed validation.",
  episode_not_started: "step/snapshot was called before reset.",
  episode_ended: "step was called after the episode terminated or was truncated.",
  environment_closed: "The environment instance was closed.",
  unknown_env: "No environment with this id is registered.",
  invalid_task_id: "The task id is malformed or names an unknown family, difficulty or split.",
  invalid_snapshot: "The snapshot cannot be restored into this environment.",
  invalid_version: "A version string is not a semantic version.",
  unknown_tool: "The tool is not defined in this episode.",
  unknown_policy: "No policy with this name exists.",
  unknown_format: "No export format with this name exists.",
  unknown_run: "No run with this id is in the trajectory store.",
  unknown_episode: "No episode with this id is in the trajectory store.",
  unknown_store: "No trajectory store exists at this path (a rollout or the service creates one).",
  episode_timeout: "An episode exceeded its time limit and was abandoned.",
  policy_failed: "The policy could not produce an action (e.g. its model server failed after retries).",
  store_error: "The trajectory store could not read or write.",
  unknown_session: "No live session with this id (never created, closed, or reaped after its idle TTL).",
  session_busy: "The session is already processing a request; its operations are never interleaved.",
  capacity_reached: "The service holds as many live sessions as it may; retry later.",
  step_timeout: "A step exceeded the service's per-step time limit; its host was stopped and the session closed.",
  resource_exhausted: "A step made its environment host exceed its memory cap; the host was stopped and the session closed.",
  host_failed: "An environment host (the worker thread running sessions or episodes) failed for a reason of its own.",
  queue_unavailable: "The job queue's Redis server could not be reached or failed a command.",
  fleet_unavailable: "The Redis that a fleet of service replicas shares could not be reached or failed a command.",
  step_conflict: "A step named the session's step count it expected (expect_steps), and the session is elsewhere: the action was not applied.",
  invalid_json: "The request body is not valid JSON.",
  payload_too_large: "The request body exceeds the service's limit.",
  unauthorized: "The request has no valid bearer token.",
  forbidden: "The token lacks the scope this operation needs.",
  unknown_route: "No such route (or method) in the service's API.",
  tool_crashed: "A tool handler threw an unexpected exception.",
  tool_failed: "A tool reported a domain error.",
  path_escape: "A path leaves the sandbox root.",
  invalid_path: "A path is malformed.",
  not_found: "A file, directory or record does not exist.",
  already_exists: "A file or directory already exists.",
  not_a_directory: "A path component is not a directory.",
  is_a_directory: "A file operation was given a directory.",
  directory_not_empty: "A directory is not empty.",
  permission_denied: "The sandbox refused access to a path or resource.",
  read_only: "A write was attempted through read-only access.",
  size_limit: "A sandbox size limit was exceeded.",
  budget_exceeded: "A sandbox operation used up its deterministic work budget and was stopped.",
  forbidden_statement: "A SQL statement that could reach outside the sandbox was refused.",
  sql_error: "A SQL statement failed.",
  stale_element: "A web action named an element id that is not on the current page.",
  not_interactable: "A web action does not apply to the element it names (fill on a link, select on a button).",
  navigation_refused: "A web navigation left the application (another origin, scheme or a malformed URL).",
  browser_unavailable: "The real browser (Chromium through playwright-core) could not be started.",
  module_load_failed: "A user environment module could not be loaded.",
  module_type_errors: "A user environment module written in TypeScript has type errors.",
  invalid_config: "A configuration value is invalid.",
  verifier_failed: "A verifier could not score the episode.",
  internal: "An unexpected internal error.",
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

// A registry-wide brand: a user's environment module may load its own copy of llmix, and its errors
// must still be recognised as LlmixErrors by this copy's CLI and service.
const BRAND = Symbol.for("llmix.error");

/** Base class of every LLMix error: a stable `code`, a human message and JSON-safe `details`. */
export class LlmixError extends Error {
  /** `x instanceof LlmixError` holds for LLMix errors from any copy of the package. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (this !== LlmixError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  readonly [BRAND] = true;
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.details = details;
  }

  /** The wire form used by the service and `--json` CLI output. */
  toJSON(): { code: ErrorCode; message: string; details: Record<string, unknown> } {
    return { code: this.code, message: this.message, details: this.details };
  }
}

/** The action handed to `step` is not a valid action. */
export class InvalidActionError extends LlmixError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super("invalid_action", message, details);
  }
}

/** A call violates the episode lifecycle (step before reset, step after the end). */
export class LifecycleError extends LlmixError {
  constructor(code: "episode_not_started" | "episode_ended" | "environment_closed", message: string, details: Record<string, unknown> = {}) {
    super(code, message, details);
  }
}

/** Arguments, ids, versions, snapshots or configuration failed validation. */
export class ValidationError extends LlmixError {
  constructor(
    code: "invalid_argument" | "invalid_task_id" | "invalid_snapshot" | "invalid_version" | "invalid_config",
    message: string,
    details: Record<string, unknown> = {},
  ) {
    super(code, message, details);
  }
}

/** Lookup of an environment or tool that does not exist. */
export class NotFoundError extends LlmixError {
  constructor(code: "unknown_env" | "unknown_tool" | "unknown_policy" | "unknown_format" | "unknown_run" | "unknown_episode" | "unknown_store", message: string, details: Record<string, unknown> = {}) {
    super(code, message, details);
  }
}

/** Errors raised by sandboxes (file system, terminal, database). Their messages are agent-facing. */
export class SandboxError extends LlmixError {
  constructor(
    code:
      | "path_escape"
      | "invalid_path"
      | "not_found"
      | "already_exists"
      | "not_a_directory"
      | "is_a_directory"
      | "directory_not_empty"
      | "permission_denied"
      | "read_only"
      | "size_limit"
      | "budget_exceeded"
      | "forbidden_statement"
      | "sql_error"
      | "stale_element"
      | "not_interactable"
      | "navigation_refused"
      | "browser_unavailable",
    message: string,
    details: Record<string, unknown> = {},
  ) {
    super(code, message, details);
  }
}

/** Service-level failures: sessions, capacity, request bodies, auth, routes. */
export class ServiceError extends LlmixError {
  constructor(
    code:
      | "unknown_session"
      | "session_busy"
      | "capacity_reached"
      | "step_timeout"
      | "resource_exhausted"
      | "host_failed"
      | "invalid_json"
      | "payload_too_large"
      | "unauthorized"
      | "forbidden"
      | "unknown_route",
    message: string,
    details: Record<string, unknown> = {},
  ) {
    super(code, message, details);
  }
}

/** A tool handler signals a domain failure (e.g. "customer not found"); the call ends with status `error`. */
export class ToolError extends LlmixError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super("tool_failed", message, details);
  }
}

/** Turns anything thrown into an LlmixError, keeping typed errors as they are. */
export function toLlmixError(error: unknown): LlmixError {
  if (error instanceof LlmixError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new LlmixError("internal", message);
}

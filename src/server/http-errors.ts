/**
 * How the service reports failures: every error is `{error: {code, message, details}}` with a stable
 * code of the core (src/core/errors.ts) and an HTTP status derived from that code alone, so a client can
 * branch on the code whatever transport (HTTP, WebSocket, MCP) carried it.
 */
import type { FastifyReply } from "fastify";
import { LlmixError, ServiceError, toLlmixError, type ErrorCode } from "../core/errors.js";

/** The HTTP status of each code that is not a 500. */
export const HTTP_STATUS: Readonly<Partial<Record<ErrorCode, number>>> = {
  invalid_action: 400,
  invalid_argument: 400,
  invalid_task_id: 400,
  invalid_snapshot: 400,
  invalid_config: 400,
  invalid_json: 400,
  unauthorized: 401,
  forbidden: 403,
  unknown_env: 404,
  unknown_session: 404,
  unknown_episode: 404,
  unknown_run: 404,
  unknown_route: 404,
  unknown_tool: 404,
  unknown_policy: 404,
  unknown_format: 404,
  session_busy: 409,
  step_conflict: 409,
  episode_not_started: 409,
  episode_ended: 409,
  environment_closed: 409,
  payload_too_large: 413,
  capacity_reached: 503,
  fleet_unavailable: 503,
  step_timeout: 504,
  resource_exhausted: 507,
};

/** The wire form of an error. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; details: Record<string, unknown> };
}

/** The HTTP status of an error code (500 for anything not in the map). */
export function statusOf(code: ErrorCode): number {
  return HTTP_STATUS[code] ?? 500;
}

/** The `{error: {...}}` body of an error. */
export function errorBody(error: LlmixError): ErrorBody {
  return { error: { code: error.code, message: error.message, details: error.details } };
}

/** Seconds a client should wait before retrying, for errors that say so (capacity_reached, fleet_unavailable). */
export function retryAfterOf(error: LlmixError): number | undefined {
  if (error.code !== "capacity_reached" && error.code !== "fleet_unavailable") return undefined;
  const value = error.details.retry_after_s;
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.ceil(value) : 1;
}

interface FrameworkError {
  code?: unknown;
  statusCode?: unknown;
  message?: unknown;
}

/**
 * Any thrown value as an LlmixError. Fastify's own errors (body limits, content types, bad URLs) carry
 * an `FST_ERR_*` code and a 4xx status; they become the core code a client can act on, never a 500.
 */
export function toServiceError(error: unknown, bodyLimit?: number): LlmixError {
  if (error instanceof LlmixError) return error;
  const e = (error ?? {}) as FrameworkError;
  const code = typeof e.code === "string" ? e.code : "";
  const status = typeof e.statusCode === "number" ? e.statusCode : 0;
  const message = typeof e.message === "string" ? e.message : String(error);
  if (code === "FST_ERR_CTP_BODY_TOO_LARGE" || status === 413) {
    const limit = bodyLimit ?? null;
    return new ServiceError("payload_too_large", `the request body exceeds the service's limit${limit === null ? "" : ` of ${limit} bytes (llmix serve --body-limit)`}`, { limit_bytes: limit });
  }
  if (code === "FST_ERR_CTP_INVALID_MEDIA_TYPE" || status === 415) {
    return new LlmixError("invalid_argument", "the request body must be JSON with Content-Type: application/json");
  }
  if (code === "FST_ERR_CTP_EMPTY_JSON_BODY" || code === "FST_ERR_CTP_INVALID_JSON_BODY") return new ServiceError("invalid_json", message);
  if (status === 404) return new ServiceError("unknown_route", message);
  if (status >= 400 && status < 500) return new LlmixError("invalid_argument", message, code ? { cause: code } : {});
  return toLlmixError(error);
}

/** Send an error as JSON with its status (and Retry-After when the client should come back later). */
export function sendError(reply: FastifyReply, error: unknown): FastifyReply {
  const e = toServiceError(error);
  const retry = retryAfterOf(e);
  if (retry !== undefined) reply.header("retry-after", String(retry));
  return reply.code(statusOf(e.code)).type("application/json; charset=utf-8").send(errorBody(e));
}

/**
 * Deepest nesting of objects and arrays a request may have. Recursive code further on (validation,
 * step records, the store, which refuses values nested deeper than 64 below a step record) would fail
 * on deeper values with a stack overflow or a late store error; refusing them up front keeps them 4xx.
 */
export const MAX_JSON_DEPTH = 64;

const PROTO_KEYS = /"(?:__proto__|constructor)"\s*:/;

/** The nesting depth of JSON text exceeds `max` (a scan of the text: no recursion, strings skipped). */
function nestedDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > max) return true;
    } else if (c === 125 || c === 93) depth--;
  }
  return false;
}

/**
 * Parse request JSON (an HTTP body or a WebSocket message): malformed text is invalid_json; keys that
 * could reach a prototype when the value is copied, and nesting deeper than MAX_JSON_DEPTH, are
 * refused. Empty text is undefined (no body).
 */
export function parseRequestJson(text: string, what = "the request body"): unknown {
  if (text.trim() === "") return undefined;
  // Each bracket costs two characters, so short text cannot be too deep and skips the scan.
  if (text.length > 2 * MAX_JSON_DEPTH && nestedDeeperThan(text, MAX_JSON_DEPTH)) {
    throw new LlmixError("invalid_argument", `${what} is nested deeper than ${MAX_JSON_DEPTH} levels`, { max_depth: MAX_JSON_DEPTH });
  }
  let value: unknown;
  try {
    value = !PROTO_KEYS.test(text)
      ? JSON.parse(text)
      : JSON.parse(text, function (key, v) {
          if (key === "__proto__" || (key === "constructor" && typeof v === "object" && v !== null && "prototype" in v)) {
            throw new SyntaxError(`forbidden key "${key}"`);
          }
          return v;
        });
  } catch (error) {
    throw new ServiceError("invalid_json", `${what} is not valid JSON: ${(error as Error).message}`);
  }
  // 1e400 is valid JSON text but parses to Infinity, which no step record can store; only text with a
  // huge number in it (or in a string, a false alarm the walk clears) pays for the walk.
  if (HUGE_NUMBER.test(text) && hasNonFinite(value)) {
    throw new ServiceError("invalid_json", `${what} holds a number too large for a double (it would be Infinity)`);
  }
  return value;
}

const HUGE_NUMBER = /\d[eE]\+?\d{3}|\d{309}/;

/** A non-finite number anywhere in a parsed value (depth is bounded by MAX_JSON_DEPTH). */
function hasNonFinite(value: unknown): boolean {
  if (typeof value === "number") return !Number.isFinite(value);
  if (typeof value !== "object" || value === null) return false;
  for (const v of Array.isArray(value) ? value : Object.values(value)) if (hasNonFinite(v)) return true;
  return false;
}

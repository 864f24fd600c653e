/**
 * The WebSocket transport, `/v1/ws`: the HTTP operations as messages, for low-latency stepping.
 *
 *   -> {"id": 1, "op": "step", "session_id": "ses_...", "action": {...}}
 *   <- {"id": 1, "ok": true, "result": {...StepResponse}}   or   {"id": 1, "ok": false, "error": {code, message, details}}
 *
 * Ops: create (params as POST /v1/sessions), step {session_id, action}, snapshot {session_id}, restore
 * {session_id, snapshot}, close {session_id}, info {session_id}, envs, env {env}, tasks {env, difficulty?,
 * split?, n?, seed?}. Messages are handled as they arrive, so replies to operations on different sessions
 * may come out of order (match them by id); a second operation on a busy session gets session_busy.
 *
 * A malformed message (not JSON, not an object, no id, unknown op) is answered with an error (id null
 * when it had none) and the connection stays open; only a message over the body limit closes it (1009).
 * Sessions belong to the service, not to the connection: they outlive it, and the idle reaper closes
 * those nobody closes. Auth is checked once, on the upgrade request (header, or ?token= for browsers).
 */
import type { FastifyInstance } from "fastify";
import { LlmixError, ServiceError } from "../core/errors.js";
import type { ServiceContext } from "./app.js";
import { parseRequestJson, toServiceError } from "./http-errors.js";

/** The operations a message can name. */
export const WS_OPS = ["create", "step", "snapshot", "restore", "close", "info", "envs", "env", "tasks"] as const;
export type WsOp = (typeof WS_OPS)[number];

type Message = Record<string, unknown>;
type MessageId = string | number | null;

/** The socket surface this module uses (the `ws` package's WebSocket). */
interface Socket {
  readonly readyState: number;
  send(data: string): void;
  on(event: "message", listener: (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => void): unknown;
}

const OPEN = 1;

function text(data: Buffer | ArrayBuffer | Buffer[]): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.isBuffer(data) ? data.toString("utf8") : Buffer.from(data).toString("utf8");
}

/** Run one message's operation; the result is what HTTP would have answered. */
async function dispatch(context: ServiceContext, message: Message): Promise<unknown> {
  const ops = context.operations;
  switch (message.op as WsOp) {
    case "create":
      return ops.createSession(message);
    case "step":
      return ops.step(message.session_id, message);
    case "snapshot":
      return ops.snapshot(message.session_id);
    case "restore":
      return ops.restore(message.session_id, message);
    case "close":
      return ops.close(message.session_id);
    case "info":
      return ops.info(message.session_id);
    case "envs":
      return ops.envs();
    case "env":
      return ops.env(message.env);
    case "tasks":
      return ops.tasks(message.env, message);
    default:
      throw new ServiceError("unknown_route", `unknown op ${JSON.stringify(message.op ?? null)}; valid: ${WS_OPS.join(", ")}`, { valid: [...WS_OPS] });
  }
}

/** Answer one raw message; never throws (every failure becomes an error reply). */
async function handle(context: ServiceContext, socket: Socket, data: Buffer | ArrayBuffer | Buffer[]): Promise<void> {
  let id: MessageId = null;
  let reply: string;
  try {
    const message = parseRequestJson(text(data), "the message");
    if (typeof message !== "object" || message === null || Array.isArray(message)) {
      throw new LlmixError("invalid_argument", 'a message is a JSON object {"id": ..., "op": ..., ...params}');
    }
    const m = message as Message;
    if ((typeof m.id === "string" && m.id !== "") || (typeof m.id === "number" && Number.isFinite(m.id))) id = m.id;
    else throw new LlmixError("invalid_argument", "id: every message needs an id (a non-empty string or a number) to match its reply");
    if (typeof m.op !== "string") throw new LlmixError("invalid_argument", `op: required; valid: ${WS_OPS.join(", ")}`, { valid: [...WS_OPS] });
    const result = await dispatch(context, m);
    reply = JSON.stringify({ id, ok: true, result });
  } catch (error) {
    const e = toServiceError(error);
    context.metrics.countError(e.code);
    reply = JSON.stringify({ id, ok: false, error: e.toJSON() });
  }
  if (socket.readyState === OPEN) socket.send(reply);
}

/** Register GET /v1/ws: the WebSocket endpoint (a plain GET without the upgrade is an invalid_argument). */
export function registerWebSocketRoute(app: FastifyInstance, context: ServiceContext): void {
  app.route({
    method: "GET",
    url: "/v1/ws",
    handler: async () => {
      throw new LlmixError("invalid_argument", "/v1/ws is a WebSocket endpoint: connect with an Upgrade: websocket request");
    },
    wsHandler: (socket: Socket) => {
      socket.on("message", (data) => void handle(context, socket, data));
    },
  });
}

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
 * Sessions belong to the token that opened them, not to the connection: they outlive it, and the idle
 * reaper closes those nobody closes. Auth is checked once, on the upgrade request (header, or ?token=).
 *
 * Backpressure: a connection may have WS_LIMITS.maxPending operations in flight; beyond that, and
 * whenever its unsent replies exceed WS_LIMITS.highWaterBytes (a client that does not read), the server
 * stops reading its messages until it catches up. A client whose unsent replies stay above the high
 * water mark for WS_LIMITS.graceMs, or reach WS_LIMITS.maxBufferedBytes, is closed with 1008 (policy
 * violation): the memory a connection can hold is bounded, however it behaves.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { LlmixError, ServiceError } from "../core/errors.js";
import type { ServiceContext } from "./app.js";
import { parseRequestJson, toServiceError } from "./http-errors.js";
import { JsonText } from "./json-text.js";
import type { Caller } from "./sessions.js";

/** The operations a message can name. */
export const WS_OPS = ["create", "step", "snapshot", "restore", "close", "info", "envs", "env", "tasks"] as const;
export type WsOp = (typeof WS_OPS)[number];

/** Bounds of one connection (see the module comment). */
export const WS_LIMITS = {
  maxPending: 256,
  highWaterBytes: 4 * 1024 * 1024,
  maxBufferedBytes: 16 * 1024 * 1024,
  graceMs: 10_000,
};

/** The close code for a client that breaks the backpressure rules (RFC 6455: policy violation). */
export const WS_POLICY_VIOLATION = 1008;

type Message = Record<string, unknown>;
type MessageId = string | number | null;

/** The socket surface this module uses (the `ws` package's WebSocket). */
interface Socket {
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(data: string, callback?: (error?: Error) => void): void;
  pause(): void;
  resume(): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
  on(event: "message", listener: (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => void): unknown;
  on(event: "close", listener: () => void): unknown;
}

const OPEN = 1;

function text(data: Buffer | ArrayBuffer | Buffer[]): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.isBuffer(data) ? data.toString("utf8") : Buffer.from(data).toString("utf8");
}

/** Run one message's operation; the result is what HTTP would have answered. */
async function dispatch(context: ServiceContext, message: Message, caller: Caller): Promise<unknown> {
  const ops = context.operations;
  switch (message.op as WsOp) {
    case "create":
      return ops.createSession(message, caller, "ws");
    case "step":
      return ops.step(message.session_id, message, caller);
    case "snapshot":
      return ops.snapshot(message.session_id, caller);
    case "restore":
      return ops.restore(message.session_id, message, caller);
    case "close":
      return ops.close(message.session_id, caller);
    case "info":
      return ops.info(message.session_id, caller);
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

/** The reply text of a result; a host's JSON text is embedded as it is, not parsed again. */
function okReply(id: MessageId, result: unknown): string {
  const body = result instanceof JsonText ? result.text : JSON.stringify(result);
  return `{"id":${JSON.stringify(id)},"ok":true,"result":${body}}`;
}

/** One connection: its messages, its in-flight count and the backpressure rules. */
class Connection {
  private pending = 0;
  private paused = false;
  private overSince: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly context: ServiceContext,
    private readonly socket: Socket,
    private readonly caller: Caller,
  ) {
    socket.on("message", (data) => void this.handle(data));
    socket.on("close", () => {
      this.closed = true;
      if (this.timer) clearTimeout(this.timer);
    });
  }

  /** Answer one raw message; never throws (every failure becomes an error reply). */
  private async handle(data: Buffer | ArrayBuffer | Buffer[]): Promise<void> {
    this.pending++;
    this.regulate();
    let id: MessageId = null;
    let reply: string;
    try {
      const message = parseRequestJson(text(data), "the message");
      if (typeof message !== "object" || message === null || Array.isArray(message)) {
        throw new LlmixError("invalid_argument", 'a message is a JSON object {"id": ..., "op": ..., ...params}');
      }
      const m = message as Message;
      if ((typeof m.id === "string" && m.id !== "" && m.id.length <= 256) || (typeof m.id === "number" && Number.isFinite(m.id))) id = m.id;
      else throw new LlmixError("invalid_argument", "id: every message needs an id (a non-empty string of at most 256 characters, or a number) to match its reply");
      if (typeof m.op !== "string") throw new LlmixError("invalid_argument", `op: required; valid: ${WS_OPS.join(", ")}`, { valid: [...WS_OPS] });
      reply = okReply(id, await dispatch(this.context, m, this.caller));
    } catch (error) {
      const e = toServiceError(error);
      this.context.metrics.countError(e.code);
      reply = JSON.stringify({ id, ok: false, error: e.toJSON() });
    }
    this.pending--;
    if (this.closed || this.socket.readyState !== OPEN) return;
    this.socket.send(reply, () => this.regulate());
    this.regulate();
  }

  /** Pause reading while the client has too much in flight or unread; close it if that lasts. */
  private regulate(): void {
    if (this.closed) return;
    const buffered = this.socket.bufferedAmount;
    if (buffered >= WS_LIMITS.maxBufferedBytes) return this.violate(`${buffered} bytes of replies unread`);
    const over = buffered > WS_LIMITS.highWaterBytes;
    if (over && this.overSince === null) {
      this.overSince = Date.now();
      this.timer = setTimeout(() => {
        if (this.socket.bufferedAmount > WS_LIMITS.highWaterBytes) this.violate(`replies unread for ${WS_LIMITS.graceMs} ms`);
      }, WS_LIMITS.graceMs);
    } else if (!over && this.overSince !== null) {
      this.overSince = null;
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
    }
    const shouldPause = over || this.pending >= WS_LIMITS.maxPending;
    if (shouldPause && !this.paused) {
      this.paused = true;
      this.socket.pause();
    } else if (!shouldPause && this.paused) {
      this.paused = false;
      this.socket.resume();
    }
  }

  private violate(why: string): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.context.metrics.countError("ws_backpressure");
    this.socket.close(WS_POLICY_VIOLATION, `client does not read its replies (${why})`.slice(0, 120));
    // The close frame waits behind the unread replies; the connection's memory is freed now, not then.
    setTimeout(() => this.socket.terminate(), 1000).unref();
  }
}

/** Register GET /v1/ws: the WebSocket endpoint (a plain GET without the upgrade is an invalid_argument). */
export function registerWebSocketRoute(app: FastifyInstance, context: ServiceContext): void {
  app.route({
    method: "GET",
    url: "/v1/ws",
    handler: async () => {
      throw new LlmixError("invalid_argument", "/v1/ws is a WebSocket endpoint: connect with an Upgrade: websocket request");
    },
    wsHandler: (socket: Socket, request: FastifyRequest) => {
      new Connection(context, socket, request.caller);
    },
  });
}

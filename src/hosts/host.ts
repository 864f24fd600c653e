/**
 * One environment host seen from the serving thread: a worker thread (host-worker.ts) under a memory
 * cap, fed one request at a time with a deadline kept here, outside the thread. A request that overruns
 * its deadline gets the thread terminated; so does nothing else, but a thread over its memory cap, or
 * one that exits, dies by itself. Either way the request it was running is the one to blame: it fails
 * with `step_timeout`, `resource_exhausted` or `host_failed`, and the requests still waiting are handed
 * to whoever owns the host (the pool), which starts a new one and sends them there.
 */
import { MessageChannel, receiveMessageOnPort, type MessagePort, type Worker } from "node:worker_threads";
import { LlmixError, ServiceError, type ErrorCode } from "../core/errors.js";
import { REQUESTS_POSTED, type HostChannel, type HostConfig, type HostNotice, type HostReply, type HostRequest } from "./protocol.js";
import { isOutOfMemory, siblingModule, startThread } from "./thread.js";

/**
 * How long the serving thread waits, spinning, for the answer to a request when it is the only request
 * in flight in the whole process (a client stepping one session): the answer of a small step comes back
 * in tens of microseconds, sooner than a wake-up through the event loop would deliver it. Bounded, and
 * only when nothing else is in flight, so no other request ever waits for the spin.
 */
const SPIN_US = 150;
/** Requests in flight on every host of this process. */
let inFlightEverywhere = 0;

/** A request waiting for (or getting) an answer from a host. */
export interface PendingRequest {
  /** The request without its id (a host numbers what it sends). */
  request: DistributiveOmit<HostRequest, "id">;
  /** Wall-clock limit of the request once it is sent, ms (0: none). */
  deadlineMs: number;
  resolve(result: unknown): void;
  reject(error: LlmixError): void;
}

type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never;

/** Why a host stopped, and what it leaves behind. */
export interface HostDeath {
  /** `step_timeout` (killed for a late request), `resource_exhausted` (memory cap) or `host_failed`. */
  code: "step_timeout" | "resource_exhausted" | "host_failed";
  message: string;
  /** The request it was running (already rejected with the error above), if any. */
  running: PendingRequest | null;
  /** Requests sent to it that it never started: to be sent again elsewhere. */
  waiting: PendingRequest[];
  /** False when the thread died before it had loaded its environments. */
  started: boolean;
}

/** Options of a host. */
export interface HostOptions {
  config: HostConfig;
  /** The thread's heap cap, MiB. */
  heapMb: number;
  name: string;
  /** Called once, when the thread is gone for any reason but `close`. */
  onDeath(death: HostDeath): void;
}

/** A worker thread running sessions, one request at a time. */
export class Host {
  private readonly worker: Worker;
  private readonly requests: MessagePort;
  private readonly replies: MessagePort;
  private readonly control: Int32Array;
  private readonly queue: PendingRequest[] = [];
  private running: { id: number; pending: PendingRequest; timer: NodeJS.Timeout | null } | null = null;
  private ready = false;
  private nextId = 1;
  /** Set when this side ends the thread: why (a deadline), or "close". */
  private stopping: { code: HostDeath["code"]; message: string } | "close" | null = null;
  private error: unknown = null;
  private dead = false;
  /** Resolves when the thread has loaded its environments (rejects if it cannot). */
  readonly started: Promise<void>;

  constructor(private readonly options: HostOptions) {
    const requests = new MessageChannel();
    const replies = new MessageChannel();
    const control = new SharedArrayBuffer(4 * Int32Array.BYTES_PER_ELEMENT);
    const channel: HostChannel = { requests: requests.port2, replies: replies.port1, control };
    this.worker = startThread(siblingModule(import.meta.url, "host-worker"), {
      workerData: { config: options.config, channel },
      transferList: [requests.port2, replies.port1],
      limits: { heapMb: options.heapMb },
      name: options.name,
    });
    this.requests = requests.port1;
    this.replies = replies.port2;
    this.control = new Int32Array(control);
    this.replies.on("message", (reply: HostReply) => this.answer(reply));
    this.replies.unref();
    let onReady!: () => void;
    let onFail!: (error: LlmixError) => void;
    this.started = new Promise<void>((resolve, reject) => {
      onReady = resolve;
      onFail = reject;
    });
    this.started.catch(() => undefined);
    this.worker.on("message", (message: HostNotice) => {
      if ("ready" in message) {
        this.ready = true;
        onReady();
        // From now on a host waiting for work does not keep the process alive; one with work does (pump).
        this.pump();
      } else if ("fatal" in message) {
        onFail(new ServiceError("host_failed", `an environment host could not start: ${message.fatal}`));
      }
    });
    this.worker.on("error", (error) => {
      this.error ??= error;
    });
    this.worker.on("exit", (code) => {
      if (!this.ready) onFail(new ServiceError("host_failed", `an environment host exited while starting (code ${code})${this.error ? `: ${(this.error as Error).message}` : ""}`));
      this.die(code);
    });
  }

  /** Requests sent or waiting (the running one included). */
  get load(): number {
    return this.queue.length + (this.running ? 1 : 0);
  }

  /** True once the thread is gone. */
  get stopped(): boolean {
    return this.dead;
  }

  /** Queue a request; it is sent when the ones before it are answered. */
  send(pending: PendingRequest): void {
    if (this.dead) {
      pending.reject(new ServiceError("host_failed", "the environment host is stopped"));
      return;
    }
    this.queue.push(pending);
    this.pump();
  }

  /** Stop the thread; requests not answered fail with host_failed. Idempotent. */
  async close(): Promise<void> {
    if (this.dead) return;
    this.stopping = "close";
    // An idle host is unref'd; its termination must still keep the process alive until it is done.
    this.worker.ref();
    await this.worker.terminate();
  }

  private pump(): void {
    if (!this.ready || this.running || this.dead) return;
    const pending = this.queue.shift();
    if (!pending) {
      this.worker.unref();
      this.replies.unref();
      return;
    }
    this.worker.ref();
    this.replies.ref();
    const id = this.nextId++;
    const timer =
      pending.deadlineMs > 0
        ? setTimeout(() => this.overrun(pending.deadlineMs), pending.deadlineMs)
        : null;
    this.running = { id, pending, timer };
    try {
      this.requests.postMessage({ ...pending.request, id } as HostRequest);
    } catch (error) {
      // An argument that cannot cross threads: refuse it; the host never saw it.
      if (timer) clearTimeout(timer);
      this.running = null;
      pending.reject(new ServiceError("host_failed", `the request could not be sent to its host: ${(error as Error).message}`));
      this.pump();
      return;
    }
    inFlightEverywhere++;
    // Wake the host if it lingers on the futex for its next request (see host-worker.ts).
    Atomics.add(this.control, REQUESTS_POSTED, 1);
    Atomics.notify(this.control, REQUESTS_POSTED);
    if (inFlightEverywhere === 1) this.spinForAnswer();
  }

  /** The only request in flight: wait for its answer a little, spinning, before leaving it to the event loop. */
  private spinForAnswer(): void {
    const until = process.hrtime.bigint() + BigInt(SPIN_US * 1000);
    while (process.hrtime.bigint() < until) {
      const answer = receiveMessageOnPort(this.replies);
      if (answer) return this.answer(answer.message as HostReply);
    }
  }

  private answer(reply: HostReply): void {
    const running = this.running;
    if (!running || running.id !== reply.id) return;
    if (running.timer) clearTimeout(running.timer);
    this.running = null;
    inFlightEverywhere--;
    if (reply.ok) running.pending.resolve(reply.result);
    else running.pending.reject(new LlmixError(reply.error.code as ErrorCode, reply.error.message, reply.error.details));
    this.pump();
  }

  /** The running request is past its deadline: only ending the thread stops it. */
  private overrun(deadlineMs: number): void {
    if (this.dead || this.stopping) return;
    this.stopping = { code: "step_timeout", message: `the request ran longer than ${deadlineMs} ms; its host was stopped` };
    void this.worker.terminate();
  }

  private die(exitCode: number): void {
    if (this.dead) return;
    this.dead = true;
    const running = this.running;
    this.running = null;
    if (running) inFlightEverywhere--;
    if (running?.timer) clearTimeout(running.timer);
    this.replies.close();
    const waiting = this.queue.splice(0);
    if (this.stopping === "close") {
      const error = new ServiceError("host_failed", "the environment host was stopped");
      running?.pending.reject(error);
      for (const p of waiting) p.reject(error);
      return;
    }
    const cause =
      this.stopping ??
      (isOutOfMemory(this.error)
        ? { code: "resource_exhausted" as const, message: `the request made its host exceed its memory cap (${this.options.heapMb} MiB); the host was stopped` }
        : { code: "host_failed" as const, message: `the environment host stopped during the request (exit code ${exitCode}${this.error ? `: ${(this.error as Error).message}` : ""})` });
    running?.pending.reject(new ServiceError(cause.code, cause.message, { host_stopped: true }));
    this.options.onDeath({ ...cause, running: running?.pending ?? null, waiting, started: this.ready });
  }
}

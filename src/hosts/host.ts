/**
 * One environment host seen from the serving thread: a worker thread (host-worker.ts) under a memory
 * cap. Requests are posted to it as they come (the host answers them one at a time, in order), so a
 * busy host never waits for the serving thread between two requests. The host publishes, in shared
 * memory, which request it is running and since when; a watchdog here, outside the thread, compares
 * that with the request's deadline and terminates the thread when it is overrun. A thread over its
 * memory cap, or one that exits, dies by itself. Either way the request it was running is the one to
 * blame: it fails with `step_timeout`, `resource_exhausted` or `host_failed`, and every other request
 * not yet answered is handed to whoever owns the host (the pool), which starts a new one and sends
 * them there.
 */
import { MessageChannel, receiveMessageOnPort, type MessagePort, type Worker } from "node:worker_threads";
import { LlmixError, ServiceError, type ErrorCode } from "../core/errors.js";
import { CONTROL_BYTES, LINGERING, REQUESTS_POSTED, RUNNING, RUNNING_SINCE, type HostChannel, type HostConfig, type HostNotice, type HostReply, type HostRequest } from "./protocol.js";
import { isOutOfMemory, siblingModule, startThread } from "./thread.js";

/**
 * How long the serving thread waits, spinning, for the answer to a request when the process serves one
 * request at a time (a client stepping one session): a small step's answer comes back sooner than a
 * wake-up through the event loop would deliver it. Bounded, and only when the process has been serving
 * one request at a time for QUIET_MS: under concurrent load the thread has other requests to read, and
 * a spin would only delay them.
 */
const SPIN_US = 400;
/** How long the process must have had at most one request outstanding before the serving thread spins. */
const QUIET_MS = 50;
/** Requests sent to hosts of this process and not yet answered (waiting ones included). */
let outstanding = 0;
/** Until when (performance.now) the process counts as busy: it had several requests outstanding. */
let busyUntil = 0;

/** A request waiting for (or getting) an answer from a host. */
export interface PendingRequest {
  /** The request without its id (a host numbers what it sends). */
  request: DistributiveOmit<HostRequest, "id">;
  /** Wall-clock limit of the request once the host starts it, ms (0: none). */
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
  /** Requests sent to it that it never answered, in order: to be sent again elsewhere. */
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

/** A worker thread running sessions, one request at a time, with requests posted ahead. */
export class Host {
  private readonly worker: Worker;
  private readonly requests: MessagePort;
  private readonly replies: MessagePort;
  private readonly control: Int32Array;
  private readonly since: Float64Array;
  /** Requests not posted yet (the thread is still starting). */
  private readonly queue: PendingRequest[] = [];
  /** Requests posted and not answered, by id, in posting order. */
  private readonly sent = new Map<number, PendingRequest>();
  private watchdog: NodeJS.Timeout | null = null;
  private flushing: NodeJS.Immediate | null = null;
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
    const control = new SharedArrayBuffer(CONTROL_BYTES);
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
    this.since = new Float64Array(control);
    this.replies.on("message", (batch: HostReply[]) => this.answerAll(batch));
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
        this.post();
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

  /** True once the thread is gone. */
  get stopped(): boolean {
    return this.dead;
  }

  /** Send a request; the host answers it after the ones sent before it. */
  send(pending: PendingRequest): void {
    if (this.dead) {
      pending.reject(new ServiceError("host_failed", "the environment host is stopped"));
      return;
    }
    if (++outstanding > 1) busyUntil = performance.now() + QUIET_MS;
    const settle = () => outstanding--;
    this.queue.push({
      ...pending,
      resolve: (result) => {
        settle();
        pending.resolve(result);
      },
      reject: (error) => {
        settle();
        pending.reject(error);
      },
    });
    this.post();
  }

  /** Stop the thread; requests not answered fail with host_failed. Idempotent. */
  async close(): Promise<void> {
    if (this.dead) return;
    this.stopping = "close";
    // An idle host is unref'd; its termination must still keep the process alive until it is done.
    this.worker.ref();
    await this.worker.terminate();
  }

  /**
   * Post the queued requests (once the thread is ready). Under load they go together, once per turn of
   * the event loop: one message and at most one wake-up of the host for every request read in that
   * turn (each wake-up is a system call, and on a virtual machine a costly one). A request alone, in a
   * quiet process, goes at once, and the serving thread spins for its answer.
   */
  private post(): void {
    if (!this.ready || this.dead || this.queue.length === 0) return;
    if (outstanding === 1 && performance.now() > busyUntil) {
      this.flush();
      this.spinForAnswer();
    } else this.flushing ??= setImmediate(() => this.flush());
  }

  private flush(): void {
    if (this.flushing) clearImmediate(this.flushing);
    this.flushing = null;
    if (this.dead || this.queue.length === 0) return;
    const batch: HostRequest[] = [];
    const pendings: Array<[number, PendingRequest]> = [];
    for (const pending of this.queue.splice(0)) {
      const id = this.nextId++;
      batch.push({ ...pending.request, id } as HostRequest);
      pendings.push([id, pending]);
    }
    try {
      this.requests.postMessage(batch);
    } catch {
      // An argument that cannot cross threads: post the batch's requests one by one; the host saw none.
      for (const [, pending] of pendings) this.queue.push(pending);
      return this.postOneByOne();
    }
    for (const [id, pending] of pendings) this.sent.set(id, pending);
    this.busy(true);
    // Count the posts; wake the host only if it sleeps on the futex waiting for them (a busy host finds them).
    Atomics.add(this.control, REQUESTS_POSTED, 1);
    if (Atomics.load(this.control, LINGERING) === 1) Atomics.notify(this.control, REQUESTS_POSTED);
  }

  /** A batch could not be posted: post its requests alone, refusing those that cannot cross threads. */
  private postOneByOne(): void {
    for (const pending of this.queue.splice(0)) {
      const id = this.nextId++;
      try {
        this.requests.postMessage([{ ...pending.request, id } as HostRequest]);
      } catch (error) {
        pending.reject(new ServiceError("host_failed", `the request could not be sent to its host: ${(error as Error).message}`));
        continue;
      }
      this.sent.set(id, pending);
      this.busy(true);
      Atomics.add(this.control, REQUESTS_POSTED, 1);
    }
    if (Atomics.load(this.control, LINGERING) === 1) Atomics.notify(this.control, REQUESTS_POSTED);
  }

  /** The only request in flight: wait for its answer a little, spinning, before leaving it to the event loop. */
  private spinForAnswer(): void {
    // performance.now allocates nothing (hrtime.bigint would feed the garbage collector while spinning).
    const until = performance.now() + SPIN_US / 1000;
    while (performance.now() < until) {
      const answer = receiveMessageOnPort(this.replies);
      if (answer) return this.answerAll(answer.message as HostReply[]);
    }
  }

  /** A message of the host: the answers it had ready together, in order. */
  private answerAll(batch: readonly HostReply[]): void {
    for (const reply of batch) this.answer(reply);
  }

  private answer(reply: HostReply): void {
    const pending = this.sent.get(reply.id);
    if (!pending) return;
    this.sent.delete(reply.id);
    if (reply.ok) pending.resolve(reply.result);
    else pending.reject(new LlmixError(reply.error.code as ErrorCode, reply.error.message, reply.error.details));
    if (this.sent.size === 0) this.busy(false);
  }

  /**
   * With requests outstanding the thread keeps the process alive and the watchdog runs; without, an
   * idle host costs nothing and keeps nothing alive.
   */
  private busy(on: boolean): void {
    if (on) {
      this.worker.ref();
      this.replies.ref();
      this.watchdog ??= setInterval(() => this.watch(), this.watchInterval());
    } else {
      this.worker.unref();
      this.replies.unref();
      if (this.watchdog) clearInterval(this.watchdog);
      this.watchdog = null;
    }
  }

  /** How often the watchdog looks: a tenth of the shortest deadline outstanding, within [10, 100] ms. */
  private watchInterval(): number {
    let shortest = Number.POSITIVE_INFINITY;
    for (const pending of this.sent.values()) if (pending.deadlineMs > 0) shortest = Math.min(shortest, pending.deadlineMs);
    return Math.max(10, Math.min(100, shortest / 10));
  }

  /** Is the request the host runs past its deadline? Then only ending the thread stops it. */
  private watch(): void {
    if (this.dead || this.stopping) return;
    const id = Atomics.load(this.control, RUNNING);
    const pending = id === 0 ? undefined : this.sent.get(id);
    if (!pending || pending.deadlineMs <= 0) return;
    if (Date.now() - (this.since[RUNNING_SINCE] as number) <= pending.deadlineMs) return;
    this.stopping = { code: "step_timeout", message: `the request ran longer than ${pending.deadlineMs} ms; its host was stopped` };
    void this.worker.terminate();
  }

  private die(exitCode: number): void {
    if (this.dead) return;
    this.dead = true;
    if (this.flushing) clearImmediate(this.flushing);
    this.flushing = null;
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
    // Answers the host sent before it stopped still count.
    for (let reply = receiveMessageOnPort(this.replies); reply; reply = receiveMessageOnPort(this.replies)) this.answerAll(reply.message as HostReply[]);
    this.replies.close();
    const runningId = Atomics.load(this.control, RUNNING);
    const running = this.sent.get(runningId) ?? null;
    this.sent.delete(runningId);
    const waiting = [...this.sent.values(), ...this.queue.splice(0)];
    this.sent.clear();
    if (this.stopping === "close") {
      const error = new ServiceError("host_failed", "the environment host was stopped");
      running?.reject(error);
      for (const p of waiting) p.reject(error);
      return;
    }
    const cause =
      this.stopping ??
      (isOutOfMemory(this.error)
        ? { code: "resource_exhausted" as const, message: `the request made its host exceed its memory cap (${this.options.heapMb} MiB); the host was stopped` }
        : { code: "host_failed" as const, message: `the environment host stopped during the request (exit code ${exitCode}${this.error ? `: ${(this.error as Error).message}` : ""})` });
    running?.reject(new ServiceError(cause.code, cause.message, { host_stopped: true }));
    this.options.onDeath({ ...cause, running, waiting, started: this.ready });
  }
}

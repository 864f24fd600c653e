/**
 * An environment host: the worker thread that runs sessions (and heavy jobs) for the service. It loads
 * the built-in environments and the `--module` files, then answers requests one at a time, in order,
 * publishing in shared memory which one it runs and since when, so whatever the host is running when
 * it overruns its deadline or its memory cap is the one request to blame (see host.ts).
 *
 * Latency: waking a thread through its event loop costs tens of microseconds, several times a small
 * step. So after answering, the host lingers: it sleeps on a futex (Atomics.wait, no CPU) for up to
 * LINGER_MS, watching a shared counter that the serving thread bumps and notifies after each post, and
 * takes a request seen that way with receiveMessageOnPort. (Spinning instead of sleeping was measured
 * slower: on two cores the spinning host takes the CPU the serving thread needs.) Only after LINGER_MS
 * without work does the host go back to its event loop, where requests arrive as ordinary messages.
 *
 * Replies go out the same way requests come in: together. Each answer waits in an outbox that is posted
 * (one message, one wake-up of the serving thread) whenever the host runs out of queued requests. Safe
 * if the host dies meanwhile: an answer the serving thread never received is a request still waiting,
 * and waiting requests are sent again after the session's rebuild (host-pool.ts), which gives the same
 * answer (environments are deterministic).
 */
import { parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import { LlmixError, toLlmixError } from "../core/errors.js";
import { addModules } from "../core/load-module.js";
import { builtinRegistry } from "../envs/index.js";
import { runJob } from "./host-jobs.js";
import { HostedSessions } from "./hosted-sessions.js";
import { LINGERING, REQUESTS_POSTED, RUNNING, RUNNING_SINCE, type HostChannel, type HostConfig, type HostNotice, type HostReply, type HostRequest } from "./protocol.js";
import { SnapshotSigner } from "./signing.js";

if (!parentPort) throw new LlmixError("internal", "environment host: not started as a worker thread");
const port = parentPort;
const { config, channel } = workerData as { config: HostConfig; channel: HostChannel };
/** How long an idle host then sleeps on the futex for its next request before returning to its event loop. */
const LINGER_MS = 2;

/** Run one request against the host's sessions. */
async function handle(sessions: HostedSessions, registry: ReturnType<typeof builtinRegistry>, request: HostRequest): Promise<unknown> {
  switch (request.kind) {
    case "open":
      return sessions.open(request.start);
    case "rebuild":
      return sessions.rebuild(request.rebuild);
    case "step":
      return sessions.step(request.sid, request.action, request.checkpoint);
    case "snapshot":
      return sessions.snapshot(request.sid);
    case "restore":
      return sessions.restore(request.sid, request.snapshot, request.trusted);
    case "tools":
      return sessions.tools(request.sid);
    case "close":
      return sessions.close(request.sid, new Date(request.created_at), new Date(request.closed_at));
    case "job":
      return runJob(registry, request.job, { redaction: config.redaction });
  }
}

/** Answers requests in order, one at a time, from the channel's messages and the futex-woken fast path. */
class Server {
  private readonly queue: HostRequest[] = [];
  private readonly control: Int32Array;
  private readonly since: Float64Array;
  /** Messages taken from the channel so far (compared with the serving thread's count of posts). */
  private taken = 0;
  private draining = false;
  /** Answers not yet posted (see the header). */
  private outbox: HostReply[] = [];

  constructor(
    private readonly sessions: HostedSessions,
    private readonly registry: ReturnType<typeof builtinRegistry>,
  ) {
    this.control = new Int32Array(channel.control);
    this.since = new Float64Array(channel.control);
    channel.requests.on("message", (batch: HostRequest[]) => this.accept(batch));
  }

  /** A message of the channel: the requests the serving thread posted together, in order. */
  private accept(batch: HostRequest[]): void {
    this.taken++;
    this.queue.push(...batch);
    if (!this.draining) void this.drain();
  }

  private async drain(): Promise<void> {
    this.draining = true;
    for (let request = this.next(); request; request = this.next()) await this.answer(request);
    this.draining = false;
  }

  /** The next request: queued, waiting in the channel, or posted within LINGER_MS; undefined if none. */
  private next(): HostRequest | undefined {
    const queued = this.queue.shift();
    if (queued) return queued;
    // Nothing queued: post what is done before waiting for more.
    this.flush();
    for (let attempt = 0; attempt < 2; attempt++) {
      const waiting = receiveMessageOnPort(channel.requests);
      if (waiting) {
        this.taken++;
        const [first, ...rest] = waiting.message as HostRequest[];
        this.queue.push(...rest);
        return first;
      }
      if (attempt === 0) this.linger();
    }
    return undefined;
  }

  /** Wait for the serving thread to post a request: sleep on the futex (see the header). */
  private linger(): void {
    Atomics.store(this.control, LINGERING, 1);
    Atomics.wait(this.control, REQUESTS_POSTED, this.taken, LINGER_MS);
    Atomics.store(this.control, LINGERING, 0);
  }

  private async answer(request: HostRequest): Promise<void> {
    // Published for the serving thread's watchdog: which request runs, since when.
    this.since[RUNNING_SINCE] = Date.now();
    Atomics.store(this.control, RUNNING, request.id);
    let reply: HostReply;
    try {
      reply = { id: request.id, ok: true, result: await handle(this.sessions, this.registry, request) };
    } catch (error) {
      const e = toLlmixError(error);
      reply = { id: request.id, ok: false, error: { code: e.code, message: e.message, details: e.details } };
    }
    this.outbox.push(reply);
    Atomics.store(this.control, RUNNING, 0);
  }

  /** Post the outbox as one message. */
  private flush(): void {
    if (this.outbox.length === 0) return;
    const batch = this.outbox;
    this.outbox = [];
    try {
      channel.replies.postMessage(batch);
    } catch {
      // A result that cannot cross threads (an environment put a function in its info, say): that answer
      // becomes an error, the others go as they are.
      for (const reply of batch) {
        try {
          channel.replies.postMessage([reply]);
        } catch (error) {
          const message = `the host could not send its answer: ${(error as Error).message}`;
          channel.replies.postMessage([{ id: reply.id, ok: false, error: { code: "internal", message, details: {} } }] satisfies HostReply[]);
        }
      }
    }
  }
}

async function main(): Promise<void> {
  const registry = builtinRegistry();
  await addModules(registry, config.modules);
  new Server(new HostedSessions(registry, new SnapshotSigner(config.snapshotKey), config.residentSessions, Date.now, config.envOptions, config.redaction), registry);
  port.postMessage({ ready: true } satisfies HostNotice);
}

main().catch((error: unknown) => {
  port.postMessage({ fatal: toLlmixError(error).message } satisfies HostNotice);
  process.exit(1);
});

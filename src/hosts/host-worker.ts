/**
 * An environment host: the worker thread that runs sessions (and heavy jobs) for the service. It loads
 * the built-in environments and the `--module` files, then answers requests one at a time, in order;
 * the serving thread sends the next only when this one is answered, so whatever the host is running
 * when it overruns its deadline or its memory cap is the one request to blame (see host.ts).
 */
import { parentPort, workerData } from "node:worker_threads";
import { LlmixError, toLlmixError } from "../core/errors.js";
import { addModules } from "../core/load-module.js";
import { builtinRegistry } from "../envs/index.js";
import { runJob } from "./host-jobs.js";
import { HostedSessions } from "./hosted-sessions.js";
import type { HostConfig, HostNotice, HostReply, HostRequest } from "./protocol.js";
import { SnapshotSigner } from "./signing.js";

if (!parentPort) throw new LlmixError("internal", "environment host: not started as a worker thread");
const port = parentPort;
const config = workerData as HostConfig;

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
      return runJob(registry, request.job);
  }
}

async function main(): Promise<void> {
  const registry = builtinRegistry();
  await addModules(registry, config.modules);
  const sessions = new HostedSessions(registry, new SnapshotSigner(config.snapshotKey));
  let queue = Promise.resolve();
  port.on("message", (request: HostRequest) => {
    queue = queue.then(async () => {
      let reply: HostReply;
      try {
        reply = { id: request.id, ok: true, result: await handle(sessions, registry, request) };
      } catch (error) {
        const e = toLlmixError(error);
        reply = { id: request.id, ok: false, error: { code: e.code, message: e.message, details: e.details } };
      }
      try {
        port.postMessage(reply);
      } catch (error) {
        // A result that cannot cross threads (an environment put a function in its info, say).
        const message = `the host could not send its answer: ${(error as Error).message}`;
        port.postMessage({ id: request.id, ok: false, error: { code: "internal", message, details: {} } } satisfies HostReply);
      }
    });
  });
  port.postMessage({ ready: true } satisfies HostNotice);
}

main().catch((error: unknown) => {
  port.postMessage({ fatal: toLlmixError(error).message } satisfies HostNotice);
  process.exit(1);
});

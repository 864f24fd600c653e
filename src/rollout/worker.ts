/**
 * A rollout worker thread: builds the environment (built-ins plus the config's `--module` files) and the
 * policy, then runs `concurrency` slots that ask the main thread for jobs and send back stored episodes.
 */
import { parentPort, workerData } from "node:worker_threads";
import { LlmixError, toLlmixError } from "../core/errors.js";
import { addModules } from "../core/load-module.js";
import { builtinRegistry } from "../envs/index.js";
import type { EpisodeJob } from "./episode.js";
import { parsePolicySpec } from "./policies/index.js";
import { runSlots, type MainMessage, type WorkerData, type WorkerMessage } from "./pool.js";

if (!parentPort) throw new LlmixError("internal", "rollout worker: not started as a worker thread");
const port = parentPort;
const data = workerData as WorkerData;
const send = (message: WorkerMessage) => port.postMessage(message);

// Job requests are answered in order, so replies resolve the oldest waiting request.
const waiting: Array<(job: EpisodeJob | null) => void> = [];
port.on("message", (message: MainMessage) => waiting.shift()?.(message.job));

async function main(): Promise<void> {
  const registry = builtinRegistry();
  await addModules(registry, data.config.modules);
  const entry = registry.get(data.config.env);
  const source = parsePolicySpec(data.config.policy, { openai: data.policyOptions });
  await runSlots(
    () =>
      new Promise<EpisodeJob | null>((resolve) => {
        waiting.push(resolve);
        send({ type: "next" });
      }),
    {
      config: data.config,
      concurrency: data.concurrency,
      create: () => entry.create(data.config.env_options),
      source,
      onResult: (stored) => send({ type: "result", stored }),
    },
  );
  port.close();
}

main().catch((error: unknown) => {
  const e = toLlmixError(error);
  send({ type: "fatal", error: { code: e.code, message: e.message } });
  port.close();
});

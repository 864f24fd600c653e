/**
 * `llmix worker`: a long-running process that runs episode jobs from a BullMQ queue on its worker
 * threads (rollout/queue/queue-worker.ts), for a `llmix rollout --queue` elsewhere that plans and
 * stores. One line per state change on stdout; SIGTERM or SIGINT finishes the active jobs and exits 0
 * (a second signal exits at once: the active jobs' locks lapse and other workers take them).
 */
import { Option, type Command } from "commander";
import { DEFAULT_THREAD_HEAP_MB } from "../hosts/thread.js";
import { QueueWorker, type QueueWorkerEvent } from "../rollout/queue/queue-worker.js";
import { DEFAULT_LOCK_MS, DEFAULT_QUEUE_NAME, displayRedisUrl, redisUrl, stalledCheckMs } from "../rollout/queue/queue-names.js";
import { MIN_WORKER_HEAP_MB } from "../rollout/worker-pool.js";
import { integer, print } from "./options.js";

interface WorkerFlags {
  redis: string;
  concurrency: number;
  workers: number;
  workerMemory: number;
  queueName: string;
  lockMs: number;
  reportEvery: number;
}

/** Add `llmix worker` to the program. */
export function registerWorkerCommand(program: Command): void {
  program
    .command("worker")
    .description("run episode jobs from a Redis queue (for llmix rollout --queue) until SIGTERM")
    .addOption(new Option("--redis <url>", "the queue's Redis: redis://HOST:PORT[/DB]").argParser((v) => redisUrl(v)).makeOptionMandatory())
    .option("--concurrency <c>", "episodes in flight per thread", integer("--concurrency", 1, 1024), 4)
    .option("--workers <t>", "worker threads that run the episodes", integer("--workers", 1, 64), 1)
    .option("--worker-memory <MiB>", "heap cap of each worker thread", integer("--worker-memory", MIN_WORKER_HEAP_MB, 1_048_576), DEFAULT_THREAD_HEAP_MB)
    .option("--queue-name <name>", "the BullMQ queue's name", DEFAULT_QUEUE_NAME)
    .option("--lock-ms <ms>", "lock duration of a job: a worker silent this long (killed, cut off) has its jobs taken by others", integer("--lock-ms", 500, 3_600_000), DEFAULT_LOCK_MS)
    .option("--report-every <n>", "print a line every n episodes", integer("--report-every", 1, 1_000_000), 100)
    .action(async (flags: WorkerFlags) => {
      const where = `queue ${flags.queueName} on ${displayRedisUrl(flags.redis)}`;
      print(`llmix worker: started (pid ${process.pid}), ${flags.workers} thread${flags.workers === 1 ? "" : "s"} × ${flags.concurrency} episodes, ${where}, lock ${flags.lockMs} ms (stall check every ${stalledCheckMs(flags.lockMs)} ms)`);
      const onEvent = (event: QueueWorkerEvent) => {
        switch (event.type) {
          case "connected":
            return print(`llmix worker: connected to ${where}; waiting for episodes`);
          case "episode":
            if (event.done % flags.reportEvery === 0) print(`llmix worker: ${event.done} episodes done (${event.errors} errors)`);
            return;
          case "job_failed":
            return print(`llmix worker: job ${event.jobId} failed: ${event.error}`);
          case "redis_error":
            return print(`llmix worker: Redis error (retrying): ${event.message}`);
        }
      };
      const worker = await QueueWorker.start({
        redisUrl: flags.redis, queueName: flags.queueName, concurrency: flags.concurrency, workers: flags.workers,
        heapMb: flags.workerMemory, lockMs: flags.lockMs, onEvent,
      });
      await new Promise<void>((resolve) => {
        const stop = (signal: NodeJS.Signals) => {
          process.once(signal, () => {
            print(`llmix worker: ${signal} again: exiting now; the active jobs go to other workers once their locks lapse`);
            process.exit(1);
          });
          print(`llmix worker: ${signal}: finishing the active jobs, taking no more`);
          void worker.close().then(resolve);
        };
        process.once("SIGTERM", stop);
        process.once("SIGINT", stop);
      });
      const { done, errors } = worker.counts;
      print(`llmix worker: stopped after ${done} episodes (${errors} errors)`);
    });
}

/**
 * Starting the worker threads that run environment code (service hosts, rollout workers): the entry
 * module's built `.js` file, or its `.ts` source through tsx when LLMix itself runs from source
 * (tests, benchmarks), always with resource limits, so a thread that allocates without bound dies
 * alone instead of taking the process with it.
 */
import { Worker, type ResourceLimits, type WorkerOptions } from "node:worker_threads";

/** Memory caps of a thread, in MiB: V8's old and young generations (native memory is not counted). */
export interface ThreadLimits {
  /** Old-generation heap cap (default 1024). A thread over it exits with ERR_WORKER_OUT_OF_MEMORY. */
  heapMb?: number;
  /** Stack size of the thread (default 4, as Node's). */
  stackMb?: number;
}

/** Default heap cap of an environment thread, in MiB. */
export const DEFAULT_THREAD_HEAP_MB = 1024;

/** The resourceLimits of a thread with these caps. */
export function resourceLimitsOf(limits: ThreadLimits = {}): ResourceLimits {
  return {
    maxOldGenerationSizeMb: limits.heapMb ?? DEFAULT_THREAD_HEAP_MB,
    maxYoungGenerationSizeMb: Math.min(64, Math.max(8, Math.round((limits.heapMb ?? DEFAULT_THREAD_HEAP_MB) / 16))),
    stackSizeMb: limits.stackMb ?? 4,
  };
}

/**
 * A worker thread running `entry` (a module URL ending in .js, or .ts when running from source; the
 * other extension is derived). `workerData` crosses by structured clone.
 */
export function startThread(entry: URL, options: { workerData?: unknown; transferList?: WorkerOptions["transferList"]; limits?: ThreadLimits; name?: string } = {}): Worker {
  const resourceLimits = resourceLimitsOf(options.limits);
  const common = { workerData: options.workerData, transferList: options.transferList, resourceLimits, name: options.name };
  if (!entry.pathname.endsWith(".ts")) return new Worker(entry, common);
  // Node 20 applies neither the parent's loader hooks nor `--import` to a worker's entry module.
  const tsx = import.meta.resolve("tsx/esm/api");
  const boot = `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(boot, { ...common, eval: true });
}

/** The URL of a sibling module, with the extension this module runs with (.js built, .ts from source). */
export function siblingModule(base: string, name: string): URL {
  const ext = base.endsWith(".ts") ? ".ts" : ".js";
  return new URL(`./${name}${ext}`, base);
}

/** True when a thread's error means it ran out of its memory cap. */
export function isOutOfMemory(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "ERR_WORKER_OUT_OF_MEMORY";
}

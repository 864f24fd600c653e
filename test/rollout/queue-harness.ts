/**
 * What the queue end-to-end tests share: the built CLI, the real Redis (LLMIX_TEST_REDIS_URL, default
 * 127.0.0.1:6379), a fresh queue and directory per test file, processes started and killed the way a
 * user runs them, and waiting with the processes' output in the timeout message.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Queue } from "bullmq";
import { Redis } from "ioredis";

/** A started CLI process. */
export interface Proc {
  child: ChildProcessWithoutNullStreams;
  /** Everything it printed, stdout and stderr interleaved (for messages and log checks). */
  out: () => string;
  /** Its stdout alone (what --json prints: a warning on stderr must not break the parse). */
  stdout: () => string;
  exited: Promise<number | null>;
}

/** One test file's queue, directory and processes (`cleanup` in afterAll). */
export function queueHarness(name: string) {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const bin = `${root}dist/cli/bin.js`;
  const redisUrl = process.env.LLMIX_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
  const dir = mkdtempSync(join(tmpdir(), `llmix-${name}-`));
  const queueName = `llmix-e2e-${name}-${randomBytes(4).toString("hex")}`;
  const queue = new Queue(queueName, { connection: { url: redisUrl, maxRetriesPerRequest: null } });
  const redis = new Redis(redisUrl);
  const children = new Set<ChildProcessWithoutNullStreams>();
  /** What the processes printed so far, for the message of a timeout. */
  const outputs: Array<() => string> = [];

  /** Start `llmix ARGS` (the built CLI) in the repository root. */
  function start(args: string[]): Proc {
    const child = spawn(process.execPath, [bin, ...args], { cwd: root });
    children.add(child);
    let out = "";
    let stdout = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d;
      stdout += d;
    });
    child.stderr.on("data", (d: Buffer) => (out += d));
    outputs.push(() => `${args.slice(0, 2).join(" ")}: ${out}`);
    const exited = new Promise<number | null>((resolve) =>
      child.on("exit", (code) => {
        children.delete(child);
        resolve(code);
      }),
    );
    return { child, out: () => out, stdout: () => stdout, exited };
  }

  /** Poll `check` until it holds; past the timeout, fail with every process's recent output. */
  async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000, pollMs = 50): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; output:\n${outputs.map((o) => o().slice(-2000)).join("\n---\n")}`);
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  /** Start an `llmix worker` on this queue (a 2 s lock: stalls recover in seconds) and wait until it is connected. */
  async function startWorker(options: { concurrency: number; reportEvery: number }): Promise<Proc> {
    const worker = start(["worker", "--redis", redisUrl, "--queue-name", queueName, "--workers", "1", "--concurrency", String(options.concurrency), "--lock-ms", "2000", "--report-every", String(options.reportEvery)]);
    await until("a worker to connect", () => worker.out().includes("connected to queue"), 30_000);
    return worker;
  }

  /** Kill every process still running, empty and close the queue, remove the directory. */
  async function cleanup(): Promise<void> {
    for (const child of children) child.kill("SIGKILL");
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    redis.disconnect();
    rmSync(dir, { recursive: true, force: true });
  }

  return { root, bin, redisUrl, dir, queueName, queue, redis, start, until, startWorker, cleanup };
}

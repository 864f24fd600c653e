import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const CHAOS = "test/chaos.e2e.test.ts";
/**
 * Kill workers and enqueuers at moments set by a run's progress: they need the machine to themselves, like
 * the chaos test, so they run one file at a time.
 */
const QUEUE_E2E = ["test/rollout/queue.e2e.test.ts", "test/rollout/queue-resume.e2e.test.ts"];
/** Drive Debian's Chromium (several processes of its own): one file at a time, after the rest, so they neither starve nor are starved. */
const BROWSER = ["src/sandboxes/web/browser-driver.test.ts", "src/envs/web-shop/faithfulness.test.ts", "test/inspector.e2e.test.ts"];

export default defineConfig({
  resolve: {
    // Examples import "llmix-rl" (the package name) as a user would; in tests that is the source tree.
    alias: { "llmix-rl": fileURLToPath(new URL("./src/index.ts", import.meta.url)) },
  },
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Two test files at a time: most of the suite waits on child processes (the CLI, servers, Python),
    // so two forks keep both cores busy; vitest's default (cores - 1) would run files one by one here.
    maxWorkers: 2,
    reporters: ["default", "./test/summary-reporter.ts"],
    projects: [
      { extends: true, test: { name: "main", include: ["src/**/*.test.ts", "test/**/*.test.ts"], exclude: [CHAOS, ...QUEUE_E2E, ...BROWSER, "**/node_modules/**"] } },
      // The chaos test measures the service's latency under attack, and the queue tests kill workers and
      // enqueuers at moments set by a run's progress: each runs alone, after everything else.
      { extends: true, test: { name: "chaos", include: [CHAOS], sequence: { groupOrder: 1 } } },
      { extends: true, test: { name: "queue-e2e", include: QUEUE_E2E, fileParallelism: false, sequence: { groupOrder: 2 } } },
      { extends: true, test: { name: "browser", include: BROWSER, fileParallelism: false, sequence: { groupOrder: 3 } } },
    ],
  },
});

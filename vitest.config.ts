import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const CHAOS = "test/chaos.e2e.test.ts";

export default defineConfig({
  resolve: {
    // Examples import "llmix-rl" (the package name) as a user would; in tests that is the source tree.
    alias: { "llmix-rl": fileURLToPath(new URL("./src/index.ts", import.meta.url)) },
  },
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    reporters: ["default", "./test/summary-reporter.ts"],
    projects: [
      { extends: true, test: { name: "main", include: ["src/**/*.test.ts", "test/**/*.test.ts"], exclude: [CHAOS, "**/node_modules/**"] } },
      // The chaos test measures the service's latency under attack: it runs alone, after everything else.
      { extends: true, test: { name: "chaos", include: [CHAOS], sequence: { groupOrder: 1 } } },
    ],
  },
});

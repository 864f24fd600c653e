/**
 * The Python client's own tests (clients/python/tests, python3 -m unittest), run here so that `npm test`
 * and CI run them. They start a real `llmix serve` from the built dist/ (npm test builds first) and
 * replay a billing-dispute reference episode through the client, the Gymnasium and the TRL adapters.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const clientDir = fileURLToPath(new URL("../clients/python/", import.meta.url));

describe("Python client (clients/python)", () => {
  it("passes its unittest suite against a real server", () => {
    const run = spawnSync("python3", ["-m", "unittest", "discover", "-s", "tests", "-v"], {
      cwd: clientDir,
      encoding: "utf8",
      timeout: 240_000,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1", PYTHONUNBUFFERED: "1" },
    });
    if (run.error) throw run.error;
    // unittest reports on stderr; show it when something failed.
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stderr).toMatch(/\nOK\b/);
  }, 300_000);
});

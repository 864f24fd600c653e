/**
 * What the hacking analysis adds to `llmix check`: `check --all` (the built-in environments and the
 * inventory-restock example) timed with and without it, as a user runs it (the built CLI, one process
 * each). Budget (issue 13): under 3 minutes with the analysis on.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));

export interface CheckTime {
  envs: number;
  with_hacking_s: number;
  without_hacking_s: number;
  /** with / without. */
  ratio: number;
  passed: boolean;
}

function timeCheck(extra: string[]): { seconds: number; passed: boolean; envs: number } {
  const started = process.hrtime.bigint();
  const run = spawnSync(process.execPath, ["dist/cli/bin.js", "check", "--all", "--module", "examples/inventory-restock.ts", "--json", ...extra], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const reports = JSON.parse(run.stdout) as Array<{ passed: boolean }> | { passed: boolean };
  const list = Array.isArray(reports) ? reports : [reports];
  return { seconds, passed: run.status === 0, envs: list.length };
}

/** `check --all` with the hacking analysis, then without it. */
export function checkTime(): CheckTime {
  const on = timeCheck([]);
  const off = timeCheck(["--no-hacking"]);
  return {
    envs: on.envs,
    with_hacking_s: Math.round(on.seconds * 10) / 10,
    without_hacking_s: Math.round(off.seconds * 10) / 10,
    ratio: Math.round((on.seconds / off.seconds) * 100) / 100,
    passed: on.passed,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(checkTime());

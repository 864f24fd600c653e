import type { CheckReport } from "./checks.js";
import { renderTable } from "./table.js";

/** Evidence lines shown under a failed check in the table; the rest are in --json. */
const SHOWN_EVIDENCE = 2;
/** Characters of an action list shown per trajectory. */
const ACTIONS_CHARS = 600;

/** The checklist as a table, one row per check, with a verdict line; a failure is followed by the trajectories that show it. */
export function formatCheckReport(report: CheckReport): string {
  const rows = report.checks.map((c) => [c.passed ? (c.warning ? "WARN" : "PASS") : "FAIL", c.name, c.warning ? `${c.summary} (warning: ${c.warning})` : c.summary]);
  const failed = report.checks.filter((c) => !c.passed).map((c) => c.name);
  const verdict = failed.length === 0
    ? `${report.env}@${report.version}: all ${report.checks.length} checks passed in ${report.seconds.toFixed(1)}s`
    : `${report.env}@${report.version}: ${failed.length} of ${report.checks.length} checks FAILED: ${failed.join(", ")}`;
  const trajectories = report.checks
    .filter((c) => !c.passed && c.evidence?.length)
    .flatMap((c) => [
      `${c.name}: ${c.evidence!.length} trajector${c.evidence!.length === 1 ? "y" : "ies"} (all in --json)`,
      ...c.evidence!.slice(0, SHOWN_EVIDENCE).flatMap((e) => {
        const actions = JSON.stringify(e.actions);
        return [
          `  - ${e.source} ${e.task_id} seed ${e.seed}: ${e.note}`,
          `    actions: ${actions.length > ACTIONS_CHARS ? `${actions.slice(0, ACTIONS_CHARS)}…` : actions}`,
          ...(e.stack ? [`    stack: ${e.stack.split("\n").slice(0, 4).join(" | ")}`] : []),
        ];
      }),
    ]);
  // Named above its table too, so with --all each table says whose it is before it starts.
  const title = `${report.env}@${report.version}: ${report.checks.length} checks`;
  return [title, renderTable(["", "check", "result"], rows), ...(trajectories.length ? ["", ...trajectories] : []), verdict].join("\n");
}

import type { CheckReport } from "./checks.js";
import { renderTable } from "./table.js";

/** The checklist as a table, one row per check, with a verdict line. */
export function formatCheckReport(report: CheckReport): string {
  const rows = report.checks.map((c) => [c.passed ? "PASS" : "FAIL", c.name, c.summary]);
  const failed = report.checks.filter((c) => !c.passed).map((c) => c.name);
  const verdict = failed.length === 0
    ? `${report.env}@${report.version}: all ${report.checks.length} checks passed in ${report.seconds.toFixed(1)}s`
    : `${report.env}@${report.version}: ${failed.length} of ${report.checks.length} checks FAILED: ${failed.join(", ")}`;
  return `${renderTable(["", "check", "result"], rows)}\n${verdict}`;
}

/**
 * Native JSONL: the trajectory records of DESIGN §1, one JSON object per line, exactly as stored (no
 * field added, renamed or dropped), each episode's steps in step order.
 */
import type { TrajectoryStepRecord } from "../../core/contract.js";

/** An episode's steps in step order (the store returns them ordered; a hand-built list may not be). */
export function inStepOrder(steps: TrajectoryStepRecord[]): TrajectoryStepRecord[] {
  for (let i = 1; i < steps.length; i++) {
    if ((steps[i - 1] as TrajectoryStepRecord).step > (steps[i] as TrajectoryStepRecord).step) {
      return [...steps].sort((a, b) => a.step - b.step);
    }
  }
  return steps;
}

/** The JSONL text of an episode's steps: one line per record, each ending in a newline. */
export function toJsonlLines(steps: readonly TrajectoryStepRecord[]): string {
  let out = "";
  for (const step of steps) out += `${JSON.stringify(step)}\n`;
  return out;
}

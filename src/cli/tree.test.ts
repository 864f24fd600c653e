import { describe, expect, it } from "vitest";
import { formatTree } from "./tree.js";

describe("formatTree", () => {
  it("renders objects, arrays and scalars as an indented tree", () => {
    const verdict = { score: 0.5, passed: false, details: { checks: [{ rule: "refund_applied", ok: true }, { rule: "note", ok: false, evidence: "no note" }], violations: [] } };
    expect(formatTree(verdict)).toBe(
      ["score: 0.5", "passed: false", "details:", "  checks:", "    - rule: refund_applied", "      ok: true", "    - rule: note", "      ok: false", "      evidence: no note", "  violations: (none)"].join("\n"),
    );
  });

  it("wraps long strings under their key instead of one long line", () => {
    const text = Array.from({ length: 40 }, (_, i) => `word${i}`).join(" ");
    const lines = formatTree({ evidence: text }, 2, 60).split("\n");
    expect(lines[0]).toBe("  evidence:");
    expect(lines.length).toBeGreaterThan(3);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(60);
    expect(lines.slice(1).map((l) => l.trim()).join(" ")).toBe(text);
  });

  it("cuts a word longer than the width", () => {
    const lines = formatTree({ blob: "x".repeat(130) }, 0, 60).split("\n");
    expect(lines).toEqual(["blob:", `  ${"x".repeat(58)}`, `  ${"x".repeat(58)}`, `  ${"x".repeat(14)}`]);
  });

  it("keeps a multi-line string's lines exactly, indentation included (a patch stays a patch)", () => {
    const patch = "--- a/x.js\n+++ b/x.js\n@@ -1,2 +1,2 @@\n function f() {\n-    return  1;\n+    return 2;";
    expect(formatTree({ patch }, 4)).toBe(["    patch:", ...patch.split("\n").map((l) => `      ${l}`)].join("\n"));
  });

  it("says (empty) and (none) for empty containers, and prints null and numbers plainly", () => {
    expect(formatTree({ a: {}, b: [], c: null, d: 1 / 3 })).toBe(["a:", "  (empty)", "b: (none)", "c: null", "d: 0.3333"].join("\n"));
  });

  it("an agent's arguments nested without end print as a bounded tree, never a stack overflow", () => {
    let nested: unknown = "bottom";
    for (let i = 0; i < 5000; i++) nested = { a: nested };
    const lines = formatTree({ args: nested }).split("\n");
    expect(lines.length).toBeLessThanOrEqual(14);
    expect(lines.at(-1)?.trim()).toBe("… (nested deeper than 12 levels)");
  });
});

import { describe, expect, it } from "vitest";
import { LlmixError } from "../../core/errors.js";
import { Rng } from "../../core/rng.js";
import { applyFilePatch, parsePatch, unifiedDiff } from "./patch.js";

const FILE = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"].join("\n") + "\n";
const apply = (content: string | null, patch: string) => {
  const [p] = parsePatch(patch);
  return applyFilePatch(content, p!, p!.newPath ?? p!.oldPath!);
};

describe("unified diffs", () => {
  it("round-trips: applying the diff of two texts gives the second", () => {
    const rng = Rng.fromSeed(5);
    for (let n = 0; n < 300; n++) {
      const before = Array.from({ length: rng.int(0, 25) }, () => rng.pick(["x", "y", "z", "", "  w"])).join("\n") + (rng.bool() ? "\n" : "");
      const lines = before.split("\n");
      for (let k = rng.int(1, 4); k > 0; k--) {
        const at = rng.int(0, lines.length);
        if (rng.bool()) lines.splice(at, rng.int(0, 2), ...Array.from({ length: rng.int(0, 2) }, () => rng.pick(["new", "x", "q q"])));
        else lines.splice(at, 1);
      }
      const after = lines.join("\n");
      const diff = unifiedDiff("f.js", before, after);
      if (before === after) expect(diff).toBe("");
      else expect(apply(before, diff), `${JSON.stringify(before)} -> ${JSON.stringify(after)}\n${diff}`).toBe(after);
    }
  });

  it("applies a hunk that moved, and a patch with a preamble and a/ b/ prefixes", () => {
    const patch = "Here is the fix:\ndiff --git a/x.js b/x.js\n--- a/x.js\n+++ b/x.js\n@@ -1,3 +1,3 @@\n e\n-f\n+F\n g\n";
    expect(apply(FILE, patch)).toBe(FILE.replace("f\n", "F\n"));
  });

  it("tolerates a final newline and trailing whitespace in context", () => {
    expect(apply(FILE, "--- a/x\n+++ b/x\n@@ -2,2 +2,2 @@\n b   \n-c\n+C\n\n")).toBe(FILE.replace("c\n", "C\n"));
  });

  it("creates and deletes files", () => {
    expect(apply(null, "--- /dev/null\n+++ b/new.js\n@@ -0,0 +1,2 @@\n+one\n+two\n")).toBe("one\ntwo\n");
    expect(apply("one\ntwo\n", "--- a/old.js\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n")).toBeNull();
  });

  it("keeps a missing final newline when the patch says so", () => {
    expect(apply("a\nb", "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n")).toBe("a\nc");
  });

  it("refuses a hunk that does not apply, naming the hunk and the line, and changes nothing", () => {
    const patch = "--- a/x.js\n+++ b/x.js\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n@@ -5,2 +5,2 @@\n e\n-nope\n+F\n";
    expect(() => apply(FILE, patch)).toThrow(/hunk 2 of 2 \(@@ -5,2 \+5,2 @@\) for x\.js does not apply: line 6 should be `nope` but is `f`/);
  });

  it("gives clear errors for malformed patches", () => {
    const cases: Array<[string, RegExp]> = [
      ["just some text", /no file changes found/],
      ["--- a/x\n+++ b/x\n", /has no hunks/],
      ["--- a/x\n+++ b/x\n@@ bad @@\n", /malformed hunk header/],
      ["--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n*a\n", /is not a hunk line/],
      ["--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n-a\n+b\n c\n d\n", /header counts are already used up/],
      ["--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n", /both sides are \/dev\/null/],
    ];
    for (const [patch, message] of cases) {
      let error: unknown;
      try {
        apply(FILE, patch);
      } catch (e) {
        error = e;
      }
      expect(error, patch).toBeInstanceOf(LlmixError);
      expect((error as LlmixError).code).toBe("tool_failed");
      expect((error as Error).message, patch).toMatch(message);
    }
    expect(() => apply(null, "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")).toThrow(/No such file/);
    expect(() => apply("x\n", "--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+a\n")).toThrow(/already exists/);
  });
});

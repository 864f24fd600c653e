import { describe, expect, it } from "vitest";
import { ActionSchema, parseAction, wellFormedAction } from "./action.js";

const CANDIDATES: unknown[] = [
  { type: "tool_call", tool: "peek", args: {} },
  { type: "tool_call", tool: "peek", args: { a: 1, b: [1, { c: null }] }, call_id: "c1" },
  { type: "tool_call", tool: "peek", args: {}, call_id: undefined },
  { type: "tool_call", tool: "peek", args: {}, extra: "dropped" },
  { type: "tool_call", tool: "", args: {} },
  { type: "tool_call", tool: "x".repeat(128), args: {} },
  { type: "tool_call", tool: "x".repeat(129), args: {} },
  { type: "tool_call", tool: "peek", args: [] },
  { type: "tool_call", tool: "peek", args: null },
  { type: "tool_call", tool: "peek", args: "{\"a\":1}" },
  { type: "tool_call", tool: "peek" },
  { type: "tool_call", tool: 7, args: {} },
  { type: "tool_call", tool: "peek", args: {}, call_id: 5 },
  { type: "tool_call", tool: "peek", args: {}, call_id: "c".repeat(257) },
  { type: "tool_call", tool: "peek", args: Object.create(null) },
  { type: "message", content: "" },
  { type: "message", content: "hello" },
  { type: "message", content: "m".repeat(200_001) },
  { type: "message" },
  { type: "message", content: 3 },
  { type: "answer", content: "x" },
  { type: "tool_call", tool: "peek", args: { n: Number.NaN } },
  null,
  undefined,
  "tool_call",
  42,
  [],
  [{ type: "message", content: "x" }],
];

describe("parseAction", () => {
  it.each(CANDIDATES.map((c, i) => [i, c] as const))("candidate %i: the hand-written check accepts only what ActionSchema accepts, with the same data", (_, candidate) => {
    const quick = wellFormedAction(candidate);
    const schema = ActionSchema.safeParse(candidate);
    if (quick !== null) {
      expect(schema.success).toBe(true);
      expect(quick).toEqual(schema.data);
    }
    const parsed = parseAction(candidate);
    const nonJson = candidate !== null && typeof candidate === "object" && "args" in candidate && Number.isNaN((candidate as { args: { n?: number } }).args?.n);
    expect(parsed.success).toBe(schema.success && !nonJson);
    if (parsed.success) expect(parsed.data).toEqual(schema.data);
    else expect(parsed.problem).toMatch(/^action/);
  });

  it("names the field in its problems", () => {
    expect(parseAction({ type: "tool_call", tool: "peek", args: { n: Number.NaN } }).problem).toBe("action.args.n: NaN is not a JSON number");
    expect(parseAction({ type: "tool_call", tool: "peek", args: [] }).problem).toMatch(/^action\.args: /);
    expect(parseAction({ type: "message" }).problem).toMatch(/^action\.content: /);
  });
});

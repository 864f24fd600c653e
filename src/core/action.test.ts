import { describe, expect, it } from "vitest";
import { ActionSchema, MAX_ACTION_DEPTH, parseAction, wellFormedAction } from "./action.js";

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

describe("actions nested too deep", () => {
  const nested = (levels: number): unknown => {
    let value: unknown = "x";
    for (let i = 0; i < levels; i++) value = [value];
    return value;
  };

  it("an action up to MAX_ACTION_DEPTH levels is fine; deeper is a problem naming the limit, without recursing into it", () => {
    // The action is level 1 and args level 2, so args may nest MAX_ACTION_DEPTH - 2 arrays.
    expect(parseAction({ type: "tool_call", tool: "t", args: { a: nested(MAX_ACTION_DEPTH - 2) } }).success).toBe(true);
    const deeper = parseAction({ type: "tool_call", tool: "t", args: { a: nested(MAX_ACTION_DEPTH - 1) } });
    expect(deeper.problem).toMatch(/^action\.args\.a(\[0\])+: nested deeper than 60 levels$/);
    // 200,000 levels would overflow any recursive walk (JSON.stringify included).
    expect(parseAction({ type: "tool_call", tool: "t", args: { a: nested(200_000) } }).problem).toContain("nested deeper than 60 levels");
  });
});

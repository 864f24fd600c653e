import { describe, expect, it } from "vitest";
import type { ToolSpec } from "../core/contract.js";
import { parsePlayLine, toolSignature } from "./play.js";

const TOOLS = ["list_charges", "end_conversation"];

describe("parsePlayLine", () => {
  it("reads a tool of the episode with or without JSON arguments", () => {
    expect(parsePlayLine('list_charges {"customer_id": "c1"}', TOOLS)).toEqual({ action: { type: "tool_call", tool: "list_charges", args: { customer_id: "c1" } } });
    expect(parsePlayLine("end_conversation", TOOLS)).toEqual({ action: { type: "tool_call", tool: "end_conversation", args: {} } });
    expect(parsePlayLine("list_charges {oops", TOOLS)).toMatchObject({ error: expect.stringMatching(/^arguments of list_charges are not valid JSON/) });
  });

  it("sends plain text as a message, and `say` explicitly", () => {
    expect(parsePlayLine("hello there, I can help", TOOLS)).toEqual({ action: { type: "message", content: "hello there, I can help" } });
    expect(parsePlayLine("hello", TOOLS)).toEqual({ action: { type: "message", content: "hello" } });
    expect(parsePlayLine("say end_conversation now", TOOLS)).toEqual({ action: { type: "message", content: "end_conversation now" } });
    expect(parsePlayLine("refund {is not json", TOOLS)).toEqual({ action: { type: "message", content: "refund {is not json" } });
  });

  it("keeps `<word> {json}` a tool call, so an unknown tool is answered by the environment", () => {
    expect(parsePlayLine("bogus_tool {}", TOOLS)).toEqual({ action: { type: "tool_call", tool: "bogus_tool", args: {} } });
  });

  it("reads raw JSON actions and commands", () => {
    expect(parsePlayLine('{"type": "message", "content": "x"}', TOOLS)).toEqual({ action: { type: "message", content: "x" } });
    expect(parsePlayLine("{nope", TOOLS)).toMatchObject({ error: expect.stringMatching(/^not valid JSON/) });
    expect(parsePlayLine(":tools", TOOLS)).toEqual({ command: "tools" });
  });
});

describe("toolSignature", () => {
  it("shows arguments with types, optional (nullable or not required) ones marked, enums and descriptions", () => {
    const tool: ToolSpec = {
      name: "list_charges",
      description: "A customer's charges.",
      effect: "read",
      parameters: {
        type: "object",
        properties: {
          customer_id: { type: "string", description: "Customer id" },
          invoice_id: { type: ["string", "null"], description: "Only this invoice, or null" },
          status: { type: "string", enum: ["paid", "refunded"] },
          ids: { type: "array", items: { type: "integer" } },
        },
        required: ["customer_id", "invoice_id", "status"],
        additionalProperties: false,
      },
    } as unknown as ToolSpec;
    expect(toolSignature(tool)).toBe(
      [
        "list_charges(customer_id: string, invoice_id?: string, status: string, ids?: integer[])  [read]",
        "  A customer's charges.",
        "    customer_id: Customer id",
        "    invoice_id (optional): Only this invoice, or null",
        '    status: one of "paid", "refunded"',
        "    ids (optional):",
      ].join("\n"),
    );
  });
});

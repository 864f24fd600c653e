import { describe, expect, it } from "vitest";
import { z } from "zod";
import { LlmixError, ValidationError, defineTool, strictModeProblems, toolsFor, type ToolDeclaration } from "../../src/index.js";

const base = {
  name: "lookup",
  description: "Look a record up.",
  input: z.object({ id: z.string().describe("record id"), verbose: z.boolean().optional() }),
  effect: "read" as const,
  handler: () => "ok",
};

function configError(overrides: Partial<ToolDeclaration<z.ZodObject>>): LlmixError {
  try {
    defineTool({ ...base, ...overrides } as ToolDeclaration<z.ZodObject>);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as LlmixError).code).toBe("invalid_config");
    return error as LlmixError;
  }
  throw new Error("defineTool accepted a bad declaration");
}

describe("defineTool validation", () => {
  it("accepts a good declaration and fills defaults", () => {
    const tool = defineTool(base);
    expect(tool.name).toBe("lookup");
    expect(tool.latency).toEqual({ kind: "fixed", ms: 0 });
    expect(tool.failures).toEqual({});
    expect(tool.cost).toBeUndefined();
  });

  it.each(["a", "A_b-9", "x".repeat(64)])("accepts name %j", (name) => {
    expect(defineTool({ ...base, name }).name).toBe(name);
  });

  it.each(["", "has space", "dot.name", "slash/name", "x".repeat(65), "ünï", "semi;colon"])("rejects name %j", (name) => {
    expect(configError({ name }).message).toContain("tool name");
  });

  it.each(["", "   ", "\n\t"])("rejects description %j", (description) => {
    expect(configError({ description }).message).toContain("needs a description");
  });

  it.each([
    ["negative fixed", { kind: "fixed", ms: -1 }],
    ["unknown kind", { kind: "gaussian", ms: 5 }],
    ["uniform max < min", { kind: "uniform", minMs: 10, maxMs: 5 }],
    ["uniform negative", { kind: "uniform", minMs: -5, maxMs: 5 }],
    ["lognormal zero median", { kind: "lognormal", medianMs: 0, sigma: 1 }],
    ["lognormal negative sigma", { kind: "lognormal", medianMs: 10, sigma: -1 }],
    ["extra key", { kind: "fixed", ms: 1, jitter: 2 }],
    ["NaN ms", { kind: "fixed", ms: Number.NaN }],
  ])("rejects latency: %s", (_name, latency) => {
    expect(configError({ latency: latency as never }).message).toContain("bad latency model");
  });

  it.each([
    ["probability > 1", { error: 1.5 }],
    ["negative probability", { timeout: -0.1 }],
    ["sum > 1", { timeout: 0.5, error: 0.4, partial: 0.2 }],
    ["unknown key", { crash: 0.1 }],
    ["zero timeoutMs", { timeout: 0.1, timeoutMs: 0 }],
    ["string probability", { error: "0.1" }],
  ])("rejects failures: %s", (_name, failures) => {
    expect(configError({ failures: failures as never }).message).toContain("bad failure profile");
  });

  it("accepts failure probabilities summing to exactly 1", () => {
    expect(() => defineTool({ ...base, failures: { timeout: 0.25, error: 0.25, rateLimit: 0.25, partial: 0.25 } })).not.toThrow();
  });

  it.each([-0.01, Number.NaN, Number.POSITIVE_INFINITY])("rejects cost %s", (cost) => {
    expect(configError({ cost }).message).toContain("cost must be");
  });

  it("accepts cost 0 and cost functions", () => {
    expect(defineTool({ ...base, cost: 0 }).cost).toBe(0);
    const fn = () => 1;
    expect(defineTool({ ...base, cost: fn }).cost).toBe(fn);
  });
});

describe("derived definitions", () => {
  const tool = defineTool({ ...base, effect: "write", permission: "records:write" });

  it("spec() is the strict schema with the effect", () => {
    const spec = tool.spec();
    expect(spec).toMatchObject({ name: "lookup", description: "Look a record up.", effect: "write" });
    expect(spec.parameters).toEqual({
      type: "object",
      properties: { id: { type: "string", description: "record id" }, verbose: { type: ["boolean", "null"] } },
      required: ["id", "verbose"],
      additionalProperties: false,
    });
    expect(strictModeProblems(spec.parameters)).toEqual([]);
  });

  it("openai() is a strict function tool", () => {
    expect(tool.openai()).toEqual({
      type: "function",
      function: { name: "lookup", description: "Look a record up.", parameters: tool.spec().parameters, strict: true },
    });
  });

  it("mcp() carries the same schema as spec() and openai(), and annotations from the effect", () => {
    const mcp = tool.mcp();
    expect(Object.keys(mcp).sort()).toEqual(["annotations", "description", "inputSchema", "name"]);
    expect(mcp.name).toBe("lookup");
    expect(JSON.stringify(mcp.inputSchema)).toBe(JSON.stringify(tool.spec().parameters));
    expect(JSON.stringify(mcp.inputSchema)).toBe(JSON.stringify(tool.openai().function.parameters));
    expect(mcp.annotations).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false });
    expect(defineTool(base).mcp().annotations).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
  });

  it("hints: a tool that ends the episode is never read-only; additive writes are not destructive; idempotent is declared", () => {
    expect(defineTool({ ...base, hints: { endsEpisode: true, idempotent: true } }).mcp().annotations).toEqual({
      readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false,
    });
    expect(defineTool({ ...base, effect: "write", hints: { additive: true } }).mcp().annotations).toEqual({
      readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false,
    });
  });

  it("refuses change hints on a read tool that cannot end the episode (invalid_config)", () => {
    for (const hints of [{ additive: true }, { idempotent: false }]) {
      const error = configError({ hints });
      expect(error.code).toBe("invalid_config");
      expect(error.message).toContain("a read tool that cannot end the episode changes nothing");
    }
  });

  it("toolsFor binds the world type and still validates", () => {
    const define = toolsFor<{ n: number }, { t: string }>();
    const t = define({ ...base, handler: (_args, ctx) => ctx.world.n });
    expect(t.name).toBe("lookup");
    expect(() => define({ ...base, name: "bad name" })).toThrow(ValidationError);
  });
});

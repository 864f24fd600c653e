import { describe, expect, it } from "vitest";
import { z } from "zod";
import { plainJsonSchema, strictJsonSchema, strictModeProblems, toolJsonSchema, withoutLengthLimits } from "../../src/index.js";

type Schema = Record<string, unknown>;

const input = z.object({
  name: z.string().min(2).max(10).describe("the name"),
  age: z.number().int().min(0).optional(),
  kind: z.enum(["a", "b"]).optional(),
  tags: z.array(z.object({ k: z.string(), v: z.string().optional() })).min(1),
  addr: z.object({
    street: z.string(),
    zip: z.string().regex(/^\d+$/).optional(),
    geo: z.object({ lat: z.number() }).optional(),
  }),
  d: z.number().default(3),
  u: z.union([z.string(), z.object({ x: z.number() })]).optional(),
});

/** Every object node (anything with properties) in a schema, with its path. */
function objectNodes(node: unknown, path = "root", out: Array<[string, Schema]> = []): Array<[string, Schema]> {
  if (!node || typeof node !== "object") return out;
  const n = node as Schema;
  if (n.properties) {
    out.push([path, n]);
    for (const [k, v] of Object.entries(n.properties as Record<string, unknown>)) objectNodes(v, `${path}.${k}`, out);
  }
  if (n.items) objectNodes(n.items, `${path}[]`, out);
  if (Array.isArray(n.anyOf)) n.anyOf.forEach((s, i) => objectNodes(s, `${path}|${i}`, out));
  return out;
}

function allKeys(node: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(node)) node.forEach((n) => allKeys(n, out));
  else if (node && typeof node === "object") {
    for (const [k, v] of Object.entries(node)) {
      out.add(k);
      if (k === "properties") Object.values(v as object).forEach((p) => allKeys(p, out));
      else allKeys(v, out);
    }
  }
  return out;
}

describe("toolJsonSchema", () => {
  const strict = toolJsonSchema(input);
  const props = strict.properties as Record<string, Schema>;

  it("makes every property required at every depth and closes every object", () => {
    const nodes = objectNodes(strict);
    expect(nodes.map(([p]) => p)).toEqual(
      expect.arrayContaining(["root", "root.tags[]", "root.addr", "root.addr.geo", "root.u|0|1"]),
    );
    for (const [path, node] of nodes) {
      expect(node.additionalProperties, path).toBe(false);
      expect([...(node.required as string[])].sort(), path).toEqual(Object.keys(node.properties as object).sort());
    }
    expect(strict.required).toEqual(["name", "age", "kind", "tags", "addr", "d", "u"]);
  });

  it("keeps required properties as they are and makes optional ones nullable", () => {
    expect(props.name).toEqual({ type: "string", minLength: 2, maxLength: 10, description: "the name" });
    expect(props.age!.type).toEqual(["integer", "null"]);
    expect(props.age!.minimum).toBe(0);
    expect(props.kind).toEqual({ anyOf: [{ type: "string", enum: ["a", "b"] }, { type: "null" }] });
    expect(props.d!.type).toEqual(["number", "null"]);
    expect((props.u!.anyOf as Schema[])[1]).toEqual({ type: "null" });
    const tagItem = (props.tags!.items as Schema).properties as Record<string, Schema>;
    expect(tagItem.k).toEqual({ type: "string" });
    expect(tagItem.v).toEqual({ type: ["string", "null"] });
    const addr = props.addr!.properties as Record<string, Schema>;
    expect(addr.zip).toEqual({ type: ["string", "null"], pattern: "^\\d+$" });
    expect(addr.geo!.type).toEqual(["object", "null"]);
  });

  it("drops keywords strict mode does not support, keeps the supported ones and the length limits", () => {
    const keys = allKeys(strict);
    for (const k of ["default", "$schema"]) expect(keys.has(k), k).toBe(false);
    for (const k of ["pattern", "minimum", "minItems", "description", "enum", "anyOf", "minLength", "maxLength"]) expect(keys.has(k), k).toBe(true);
    // the plain schema still carries the default
    expect(JSON.stringify(plainJsonSchema(input))).toContain('"default":3');
  });

  it("lists type, properties, required and additionalProperties first, whatever zod wrote first", () => {
    const described = toolJsonSchema(z.object({ q: z.string().max(5).optional() }).describe("a described root"));
    expect(Object.keys(described)).toEqual(["type", "properties", "required", "additionalProperties", "description"]);
    expect(JSON.stringify(described.properties)).toBe('{"q":{"type":["string","null"],"maxLength":5}}');
  });

  it("refuses an input that is not an object schema (invalid_config)", () => {
    expect(() => toolJsonSchema(z.string())).toThrow(/must be a zod object schema/);
  });

  it("keeps the 0.1 name strictJsonSchema as the same function", () => {
    expect(strictJsonSchema).toBe(toolJsonSchema);
  });

  it("passes its own strict-mode check", () => {
    expect(strictModeProblems(strict)).toEqual([]);
  });

  it("an empty object schema is still closed", () => {
    expect(toolJsonSchema(z.object({}))).toEqual({ type: "object", properties: {}, required: [], additionalProperties: false });
  });

  it("does not mutate shared results between calls", () => {
    const a = toolJsonSchema(input);
    (a.properties as Record<string, Schema>).name!.type = "number";
    expect((toolJsonSchema(input).properties as Record<string, Schema>).name!.type).toBe("string");
  });
});

describe("plainJsonSchema", () => {
  it("is the zod input schema without $schema", () => {
    const plain = plainJsonSchema(z.object({ a: z.string(), b: z.number().optional() }));
    expect(plain.$schema).toBeUndefined();
    expect(plain).toMatchObject({ type: "object", required: ["a"], properties: { a: { type: "string" }, b: { type: "number" } } });
  });

  it("throws for unrepresentable inputs", () => {
    expect(() => plainJsonSchema(z.object({ f: z.custom<() => void>(() => true).transform((x) => x) }))).toThrow();
    expect(() => plainJsonSchema(z.object({ b: z.bigint() }))).toThrow();
  });
});

describe("strictModeProblems", () => {
  it("flags the non-strict plain schema", () => {
    const problems = strictModeProblems(plainJsonSchema(input));
    expect(problems).toContain("root: additionalProperties must be false");
    expect(problems.some((p) => p.includes("minLength")), "the length limits are kept on purpose").toBe(false);
    expect(problems).toContain("root.age: every property must be listed in required");
    expect(problems).toContain("root.tags[]: additionalProperties must be false");
    expect(problems).toContain("root.addr.geo: additionalProperties must be false");
    expect(problems).toContain('root.d: keyword "default" is not supported in strict mode');
  });

  it("flags a root that is not an object", () => {
    expect(strictModeProblems({ type: "string" })).toContain("root: must be type object");
    expect(strictModeProblems({ type: "array", items: { type: "string" } })).toContain("root: must be type object");
  });

  it("flags nesting deeper than 10 levels", () => {
    let node: Schema = { type: "string" };
    for (let i = 0; i < 12; i++) node = { type: "object", properties: { x: node }, required: ["x"], additionalProperties: false };
    expect(strictModeProblems(node).some((p) => p.includes("nested deeper than 10 levels"))).toBe(true);
    let shallow: Schema = { type: "string" };
    for (let i = 0; i < 5; i++) shallow = { type: "object", properties: { x: shallow }, required: ["x"], additionalProperties: false };
    expect(strictModeProblems(shallow)).toEqual([]);
  });

  it("flags enums over 1000 values and schemas over 5000 properties", () => {
    const bigEnum = { type: "object", properties: { e: { type: "string", enum: Array.from({ length: 1001 }, (_, i) => `v${i}`) } }, required: ["e"], additionalProperties: false };
    expect(strictModeProblems(bigEnum)).toContain("root.e: enum has more than 1000 values");
    const many = Object.fromEntries(Array.from({ length: 5001 }, (_, i) => [`p${i}`, { type: "string" }]));
    const wide = { type: "object", properties: many, required: Object.keys(many), additionalProperties: false };
    expect(strictModeProblems(wide)).toContain("schema has 5001 properties; strict mode allows 5000");
  });

  it("looks inside anyOf and $defs", () => {
    const schema = {
      type: "object",
      properties: { a: { anyOf: [{ type: "object", properties: { q: { type: "string" } } }, { type: "null" }] } },
      required: ["a"],
      additionalProperties: false,
      $defs: { Thing: { type: "object", properties: {}, additionalProperties: true } },
    };
    const problems = strictModeProblems(schema);
    expect(problems).toContain("root.a.anyOf[0]: additionalProperties must be false");
    expect(problems).toContain("root.a.anyOf[0].q: every property must be listed in required");
    expect(problems).toContain("$defs.Thing: additionalProperties must be false");
  });

  it("accepts a hand-written strict schema", () => {
    expect(
      strictModeProblems({
        type: "object",
        properties: { q: { type: ["string", "null"], description: "query" }, n: { type: "integer", minimum: 1 } },
        required: ["q", "n"],
        additionalProperties: false,
      }),
    ).toEqual([]);
  });
});

describe("withoutLengthLimits", () => {
  it("drops minLength and maxLength at every depth, and keeps a property that is called maxLength", () => {
    const schema = toolJsonSchema(z.object({ maxLength: z.string().max(5), nested: z.object({ s: z.string().min(1).max(9) }), list: z.array(z.string().max(3)) }));
    const stripped = withoutLengthLimits(schema) as { properties: Record<string, unknown> };
    expect(JSON.stringify(stripped)).not.toMatch(/"(min|max)Length":\d/);
    expect(Object.keys(stripped.properties)).toEqual(["maxLength", "nested", "list"]);
    expect(stripped.properties.maxLength).toEqual({ type: "string" });
    expect(strictModeProblems(stripped as Record<string, unknown>)).toEqual([]);
    // The input is left as it was.
    expect(JSON.stringify(schema)).toMatch(/"maxLength":5/);
  });
});

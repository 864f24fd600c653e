/**
 * JSON Schemas derived from a tool's zod input: the OpenAI strict function-calling form and the plain
 * form MCP uses, plus a checker for OpenAI strict-mode rules used by `llmix check`.
 */
import { z } from "zod";

type Schema = Record<string, unknown>;

// Keywords OpenAI strict mode accepts. Others (minLength, default, ...) are dropped from the schema the
// model sees; zod still enforces them when the call arrives, so nothing is lost but a hint.
const STRICT_KEYWORDS = new Set([
  "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
  "description", "title", "$defs", "$ref", "pattern", "format", "minimum", "maximum",
  "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
]);

/** The plain JSON Schema (draft 2020-12) of a zod object: what MCP `inputSchema` carries. */
export function plainJsonSchema(input: z.ZodType): Schema {
  const schema = z.toJSONSchema(input, { io: "input", unrepresentable: "throw" }) as Schema;
  delete schema.$schema;
  return schema;
}

/** The OpenAI strict-mode JSON Schema: every property required, optional ones nullable, no extra keys. */
export function strictJsonSchema(input: z.ZodType): Schema {
  return toStrict(plainJsonSchema(input));
}

function toStrict(node: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (!STRICT_KEYWORDS.has(key)) continue;
    out[key] = value;
  }
  if (Array.isArray(out.anyOf)) out.anyOf = (out.anyOf as Schema[]).map(toStrict);
  if (out.items && typeof out.items === "object" && !Array.isArray(out.items)) out.items = toStrict(out.items as Schema);
  if (out.$defs) {
    out.$defs = Object.fromEntries(Object.entries(out.$defs as Record<string, Schema>).map(([k, v]) => [k, toStrict(v)]));
  }
  if (out.type === "object" || out.properties) {
    const properties = (out.properties ?? {}) as Record<string, Schema>;
    const required = new Set((node.required as string[] | undefined) ?? []);
    out.properties = Object.fromEntries(
      Object.entries(properties).map(([name, prop]) => {
        const strict = toStrict(prop);
        return [name, required.has(name) ? strict : nullable(strict)];
      }),
    );
    out.required = Object.keys(properties);
    // A schema for extra keys (z.record, catchall) has no strict-mode form: keep it so the checker flags it.
    out.additionalProperties = typeof node.additionalProperties === "object" ? node.additionalProperties : false;
  }
  return out;
}

function nullable(schema: Schema): Schema {
  if (typeof schema.type === "string" && !schema.enum && !schema.const) {
    return { ...schema, type: [schema.type, "null"] };
  }
  return { anyOf: [schema, { type: "null" }] };
}

/** Problems that would make OpenAI reject the schema in strict mode (empty list: compatible). */
export function strictModeProblems(schema: Schema): string[] {
  const problems: string[] = [];
  if (schema.type !== "object") problems.push("root: must be type object");
  let properties = 0;
  const visit = (node: unknown, path: string, depth: number): void => {
    if (!node || typeof node !== "object") return;
    const n = node as Schema;
    if (depth > 10) problems.push(`${path}: nested deeper than 10 levels`);
    for (const key of Object.keys(n)) {
      if (!STRICT_KEYWORDS.has(key)) problems.push(`${path}: keyword "${key}" is not supported in strict mode`);
    }
    const isObject = n.type === "object" || (Array.isArray(n.type) && n.type.includes("object")) || "properties" in n;
    if (isObject) {
      if (n.additionalProperties !== false) problems.push(`${path}: additionalProperties must be false`);
      const props = (n.properties ?? {}) as Record<string, unknown>;
      const required = new Set(Array.isArray(n.required) ? (n.required as string[]) : []);
      for (const name of Object.keys(props)) {
        properties++;
        if (!required.has(name)) problems.push(`${path}.${name}: every property must be listed in required`);
        visit(props[name], `${path}.${name}`, depth + 1);
      }
    }
    if (Array.isArray(n.enum) && n.enum.length > 1000) problems.push(`${path}: enum has more than 1000 values`);
    if (n.items) visit(n.items, `${path}[]`, depth + 1);
    if (Array.isArray(n.anyOf)) n.anyOf.forEach((s, i) => visit(s, `${path}.anyOf[${i}]`, depth));
    if (n.$defs) for (const [k, v] of Object.entries(n.$defs as object)) visit(v, `$defs.${k}`, depth);
  };
  visit(schema, "root", 0);
  if (properties > 5000) problems.push(`schema has ${properties} properties; strict mode allows 5000`);
  return problems;
}

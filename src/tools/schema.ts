/**
 * The JSON Schema of a tool's arguments. One function renders it (`toolJsonSchema`) and every surface
 * carries its output unchanged: `tool.spec().parameters` (GET /v1/envs/:env, POST /v1/sessions, the CLI,
 * the trajectory store and the exports that read it), `tool.openai()` and MCP's `inputSchema`.
 *
 * The schema is OpenAI strict mode's form: every property required (optional ones nullable, so a model
 * can leave them out with null), `additionalProperties: false` on every object; it keeps the length
 * limits (`minLength`, `maxLength`) too, so a client sees the bounds the tool enforces. Keys come in
 * one canonical order (`type`, `properties`, `required`, `additionalProperties` first), so the same
 * schema serializes to the same bytes whichever surface (and JSON library) carried it.
 */
import { z } from "zod";
import { ValidationError } from "../core/errors.js";

type Schema = Record<string, unknown>;

// Keywords the tool schema keeps: OpenAI strict mode's, plus the string length limits. Others (default,
// examples, ...) are dropped from the schema a client sees; zod still enforces them when the call
// arrives, so nothing is lost but a hint.
const SCHEMA_KEYWORDS = new Set([
  "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
  "description", "title", "$defs", "$ref", "pattern", "format", "minimum", "maximum",
  "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "minLength", "maxLength",
]);

/** Keys an object schema lists first, in this order; the rest follow in the order zod wrote them. */
const LEADING_KEYS = ["type", "properties", "required", "additionalProperties"];

/** The plain JSON Schema (draft 2020-12) of a zod type, as zod writes it: the input `toolJsonSchema` starts from. */
export function plainJsonSchema(input: z.ZodType): Schema {
  const schema = z.toJSONSchema(input, { io: "input", unrepresentable: "throw" }) as Schema;
  delete schema.$schema;
  return schema;
}

/**
 * The JSON Schema of a tool's arguments, the one every surface shows (see the module comment): strict
 * mode's form plus the length limits, keys in canonical order. Throws invalid_config unless the input is
 * an object schema.
 */
export function toolJsonSchema(input: z.ZodType): Schema {
  const schema = toStrict(plainJsonSchema(input));
  if (schema.type !== "object") throw new ValidationError("invalid_config", `a tool's input must be a zod object schema, got JSON Schema type ${JSON.stringify(schema.type)}`);
  return schema;
}

/**
 * The schema without its string length limits: OpenAI's strict mode documents `pattern` and `format` as
 * its only string keywords and refuses others, so a request that sets `strict: true` sends this form
 * (the tool still enforces the limits when the call arrives, and answers invalid_call past them).
 */
export function withoutLengthLimits(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutLengthLimits);
  if (schema === null || typeof schema !== "object") return schema;
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema as Schema)) {
    if (key === "minLength" || key === "maxLength") continue;
    // Property names are data, not keywords: a property may be called maxLength.
    out[key] = key === "properties" || key === "$defs"
      ? Object.fromEntries(Object.entries(value as Schema).map(([name, sub]) => [name, withoutLengthLimits(sub)]))
      : withoutLengthLimits(value);
  }
  return out;
}

/** @deprecated The tool schema is `toolJsonSchema`; this name is kept for code written against 0.1. */
export const strictJsonSchema = toolJsonSchema;

function toStrict(node: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (!SCHEMA_KEYWORDS.has(key)) continue;
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
    return leading(out);
  }
  return out;
}

/** The same schema with LEADING_KEYS first. */
function leading(node: Schema): Schema {
  const out: Schema = {};
  for (const key of LEADING_KEYS) if (key in node) out[key] = node[key];
  for (const [key, value] of Object.entries(node)) if (!(key in out)) out[key] = value;
  return out;
}

function nullable(schema: Schema): Schema {
  if (typeof schema.type === "string" && !schema.enum && !schema.const) {
    return leading({ ...schema, type: [schema.type, "null"] });
  }
  return { anyOf: [schema, { type: "null" }] };
}

/**
 * Problems that would make OpenAI reject the schema in strict mode (empty list: compatible). The
 * string length limits are accepted: the tool schema keeps them (see the module comment).
 */
export function strictModeProblems(schema: Schema): string[] {
  const problems: string[] = [];
  if (schema.type !== "object") problems.push("root: must be type object");
  let properties = 0;
  const visit = (node: unknown, path: string, depth: number): void => {
    if (!node || typeof node !== "object") return;
    const n = node as Schema;
    if (depth > 10) problems.push(`${path}: nested deeper than 10 levels`);
    for (const key of Object.keys(n)) {
      if (!SCHEMA_KEYWORDS.has(key)) problems.push(`${path}: keyword "${key}" is not supported in strict mode`);
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

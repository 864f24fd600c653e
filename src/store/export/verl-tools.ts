/**
 * verl tool config (`llmix export --format verl-tools`): the file `actor_rollout_ref.rollout.multi_turn.
 * tool_config_path` names, one entry per tool of the run's environment, each pointing at
 * `llmix_client.verl.LlmixTool` (verl 0.8.0.dev, commit b178a3cd, `verl/tools/utils/tool_registry.py`
 * `initialize_tools_from_config`):
 *
 *   tools:
 *     - class_name: llmix_client.verl.LlmixTool
 *       config: {type: native, env: <env id>, env_version: <version>}
 *       tool_schema: {type: function, function: {name, description, parameters}}
 *
 * verl validates `tool_schema` with its pydantic `OpenAIFunctionToolSchema` (`verl/tools/schemas.py`):
 * `parameters` is `{type, properties, required}` (all three required), and a property is
 * `{type: str, description?: str, enum?: list[str]}`; every other JSON Schema keyword is silently dropped,
 * and a property without a single string `type` (`anyOf`, `type: [..., "null"]`) is a validation error.
 * So each property is written in that form, with what the form cannot hold (null allowed, the item type
 * of an array, several types, a non-string enum, the fields of an object) folded into its description in
 * parentheses: the model sees the constraint, and the schema written is exactly the one verl renders
 * (`tool_schema.model_dump(exclude_unset=True, exclude_none=True)`), the same one `verl-sft` rows hold.
 * The environment still validates every call against the full schema.
 *
 * The file is JSON (a YAML 1.2 subset, which OmegaConf's PyYAML loader reads) after `#` comment lines.
 * Strings escape what YAML and OmegaConf would otherwise interpret: `${` (an OmegaConf interpolation),
 * the characters PyYAML refuses in a stream (DEL, C1 controls, U+FFFE/U+FFFF) and those it reads as
 * line breaks inside a quoted string (U+0085, U+2028, U+2029).
 */
import type { ToolSpec } from "../../core/contract.js";
import type { Redactor } from "../redaction.js";
import type { RunRecord } from "../types.js";
import { ExportFile } from "./output.js";
import { VERL_COMMIT, VERL_VERSION } from "./verl.js";

/** The verl tool class every entry names. */
export const VERL_TOOL_CLASS = "llmix_client.verl.LlmixTool";

/** A property as verl's `OpenAIFunctionPropertySchema` holds it. */
export interface VerlPropertySchema {
  type: string;
  description?: string;
  enum?: string[];
}

/** A tool as verl's `OpenAIFunctionToolSchema` holds it. */
export interface VerlToolSchema {
  type: "function";
  function: {
    name: string;
    description: string;
    parameters: { type: "object"; properties: Record<string, VerlPropertySchema>; required: string[] };
  };
}

/** One entry of the tool config. */
export interface VerlToolEntry {
  class_name: string;
  config: { type: "native"; env: string; env_version: string };
  tool_schema: VerlToolSchema;
}

/** What `exportVerlTools` wrote (`rows`: tool entries). */
export interface VerlToolsResult {
  format: "verl-tools";
  path: string;
  rows: number;
  bytes: number;
}

const JSON_TYPES = new Set(["string", "number", "integer", "boolean", "array", "object", "null"]);

/** A tool in verl's OpenAI function form (see the module comment for what is folded into descriptions). */
export function toVerlToolSchema(tool: ToolSpec): VerlToolSchema {
  const params = isObject(tool.parameters) ? tool.parameters : {};
  const props = isObject(params.properties) ? params.properties : {};
  const properties: Record<string, VerlPropertySchema> = {};
  for (const [name, schema] of Object.entries(props)) properties[name] = verlProperty(schema);
  const required = Array.isArray(params.required) ? params.required.filter((r): r is string => typeof r === "string") : [];
  return { type: "function", function: { name: tool.name, description: tool.description, parameters: { type: "object", properties, required } } };
}

/** One JSON Schema property in verl's `{type, description?, enum?}` form. */
export function verlProperty(schema: unknown): VerlPropertySchema {
  const s = isObject(schema) ? schema : {};
  const info = typeInfo(s);
  const nonNull = info.types.filter((t) => t !== "null");
  const notes: string[] = [];
  let type = nonNull[0];
  if (type === undefined) {
    type = info.types.includes("null") ? "null" : "string";
    if (!info.types.includes("null")) notes.push("any JSON value");
  }
  if (nonNull.length > 1) notes.push(`one of the types ${nonNull.join(", ")}`);
  const itemType = type === "array" ? info.items : undefined;
  if (itemType) notes.push(`array of ${itemType}`);
  if (type === "object" && info.fields.length > 0) notes.push(`object with fields ${info.fields.join(", ")}`);
  const enumValues = info.enum?.filter((v) => v !== null);
  let enumStrings: string[] | undefined;
  if (enumValues && enumValues.length > 0) {
    if (enumValues.every((v): v is string => typeof v === "string")) enumStrings = enumValues;
    else notes.push(`one of ${enumValues.map((v) => JSON.stringify(v)).join(", ")}`);
  }
  const nullable = info.types.includes("null") || (info.enum?.includes(null) ?? false);
  const description = info.description;
  if (nullable && type !== "null" && !(description && /\bnull\b/i.test(description))) notes.push("or null");
  const out: VerlPropertySchema = { type };
  const full = [description, notes.length > 0 ? `(${notes.join("; ")})` : undefined].filter((p): p is string => !!p).join(" ");
  if (full) out.description = full;
  if (enumStrings) out.enum = enumStrings;
  return out;
}

interface TypeInfo {
  types: string[];
  description?: string;
  enum?: unknown[];
  items?: string;
  fields: string[];
}

/** The types a schema admits (through `type`, `type: [...]`, `anyOf`/`oneOf`), with the first description, enum and item type found. */
function typeInfo(s: Record<string, unknown>): TypeInfo {
  const info: TypeInfo = { types: [], fields: [] };
  const add = (t: unknown) => {
    if (typeof t === "string" && JSON_TYPES.has(t) && !info.types.includes(t)) info.types.push(t);
  };
  if (typeof s.description === "string") info.description = s.description;
  if (Array.isArray(s.enum)) info.enum = s.enum;
  if (typeof s.type === "string") add(s.type);
  else if (Array.isArray(s.type)) s.type.forEach(add);
  if (info.types.length === 0 && info.enum) {
    for (const v of info.enum) add(v === null ? "null" : Array.isArray(v) ? "array" : typeof v === "number" ? (Number.isInteger(v) ? "integer" : "number") : typeof v);
  }
  if (isObject(s.items)) info.items = typeInfo(s.items).types.filter((t) => t !== "null")[0];
  if (isObject(s.properties)) info.fields = Object.keys(s.properties);
  const branches = Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : [];
  for (const branch of branches) {
    if (!isObject(branch)) continue;
    const b = typeInfo(branch);
    b.types.forEach(add);
    info.description ??= b.description;
    if (b.types.some((t) => t !== "null")) {
      info.enum ??= b.enum;
      info.items ??= b.items;
      if (info.fields.length === 0) info.fields = b.fields;
    }
  }
  return info;
}

/** The tool config of a run: one entry per distinct tool name (verl keys tools by name). */
export function verlToolConfig(run: RunRecord): { tools: VerlToolEntry[] } {
  const seen = new Set<string>();
  const tools: VerlToolEntry[] = [];
  for (const tool of run.tools) {
    if (seen.has(tool.name)) continue;
    seen.add(tool.name);
    tools.push({ class_name: VERL_TOOL_CLASS, config: { type: "native", env: run.env, env_version: run.env_version }, tool_schema: toVerlToolSchema(tool) });
  }
  return { tools };
}

/** The tool config file's text: `#` comments, then the config as JSON with YAML/OmegaConf-safe strings. */
export function renderVerlToolConfig(run: RunRecord): string {
  const header = [
    `# verl tool config for LLMix environment ${run.env} ${run.env_version} (run ${run.run_id}).`,
    `# Generated by \`llmix export --format verl-tools\`; verl ${VERL_VERSION} (commit ${VERL_COMMIT}).`,
    "# Set actor_rollout_ref.rollout.multi_turn.tool_config_path to this file; see docs/verl.md.",
    "# Add \"url\": \"http://host:port\" to an entry's config (default: $LLMIX_URL or http://127.0.0.1:8377).",
  ]
    .map((line) => line.replace(/[\r\n]/g, " "))
    .join("\n");
  return `${header}\n${yamlSafeJson(verlToolConfig(run))}\n`;
}

/** Write a run's verl tool config to `out` (replaced atomically); LlmixError "store_error" when unwritable. */
export async function exportVerlTools(input: RunRecord, out: string, redactor?: Redactor): Promise<VerlToolsResult> {
  // The run's tools were read from an episode's environment: redacted like its records (see index.ts).
  const run = redactor ? redactedTools(input, redactor) : input;
  const file = await ExportFile.open(out);
  try {
    const config = verlToolConfig(run);
    await file.write(renderVerlToolConfig(run));
    const bytes = await file.commit();
    return { format: "verl-tools", path: out, rows: config.tools.length, bytes };
  } catch (error) {
    await file.abort();
    throw error;
  }
}

/** The run with its tool specs redacted (names, descriptions and schemas are text like any other). */
export function redactedTools(run: RunRecord, redactor: Redactor): RunRecord {
  return { ...run, tools: redactor.redactJson(run.tools).value };
}

/** JSON whose strings survive PyYAML and OmegaConf unchanged (see the module comment). */
export function yamlSafeJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === "string" ? escapeInterpolation(v) : v), 2).replace(
    /[\u007f-\u009f\u2028\u2029\ufffe\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** OmegaConf reads `${` as an interpolation and `\` runs before it as escapes: N backslashes + `${` become 2N+1 + `${`. */
export function escapeInterpolation(value: string): string {
  return value.replace(/(\\*)\$\{/g, (_m, slashes: string) => `${slashes}${slashes}\\\${`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * `--module PATH`: load environments a user wrote in a file of their own (TypeScript or JavaScript),
 * so authors can run the checklist while they build. The module's default export is an environment
 * entry (see `entryFor`), an array of them, or an environment class.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { LlmixError } from "./errors.js";
import type { BaseEnvironment } from "./environment.js";
import { entryFor, type EnvironmentEntry, type EnvironmentRegistry } from "./registry.js";

/** Load a module and return the environment entries it exports. */
export async function loadEnvironmentModule(path: string): Promise<EnvironmentEntry[]> {
  const absolute = resolve(path);
  if (!existsSync(absolute)) throw new LlmixError("module_load_failed", `--module ${path}: no such file`);
  let mod: Record<string, unknown>;
  try {
    if (/\.(c|m)?ts$/.test(absolute)) {
      const { tsImport } = await import("tsx/esm/api");
      mod = (await tsImport(pathToFileURL(absolute).href, import.meta.url)) as Record<string, unknown>;
    } else {
      mod = (await import(pathToFileURL(absolute).href)) as Record<string, unknown>;
    }
  } catch (error) {
    throw new LlmixError("module_load_failed", `--module ${path}: ${(error as Error).message.split("\n")[0]}`);
  }
  const exported = mod.default ?? mod.environments;
  const items = Array.isArray(exported) ? exported : [exported];
  const entries = items.map((item) => ({ ...toEntry(item, path), module: absolute }));
  if (entries.length === 0) throw new LlmixError("module_load_failed", `--module ${path}: exports no environment`);
  return entries;
}

/** Load each module into the registry (user modules replace built-ins of the same id). */
export async function addModules(registry: EnvironmentRegistry, paths: readonly string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const path of paths) {
    for (const entry of await loadEnvironmentModule(path)) {
      registry.register(entry, { replace: true });
      ids.push(entry.id);
    }
  }
  return ids;
}

function toEntry(item: unknown, path: string): EnvironmentEntry {
  // Duck-typed: a user's module may import its own copy of llmix, whose BaseEnvironment is another class.
  const proto = typeof item === "function" ? (item.prototype as Partial<BaseEnvironment>) : undefined;
  if (proto && typeof proto.reset === "function" && typeof proto.step === "function") {
    return entryFor(item as never);
  }
  const e = item as Partial<EnvironmentEntry> | null;
  if (e && typeof e === "object" && typeof e.id === "string" && typeof e.version === "string" && typeof e.create === "function") {
    return { description: "", ...e } as EnvironmentEntry;
  }
  throw new LlmixError(
    "module_load_failed",
    `--module ${path}: the default export must be an environment entry (entryFor(MyEnv)), an array of entries, or a class extending BaseEnvironment`,
  );
}

/** Option parsers and helpers shared by the `llmix` commands. */
import cliProgress from "cli-progress";
import { Option } from "commander";
import { ValidationError } from "../core/errors.js";
import { addModules } from "../core/load-module.js";
import type { EnvironmentRegistry } from "../core/registry.js";
import { builtinRegistry } from "../envs/index.js";
import { DEFAULT_STORE_PATH } from "../store/sqlite-store.js";

/** Commander reducer for repeatable options. */
export const collect = (value: string, previous: string[] = []) => [...previous, value];
/** `--store PATH|URL`: the trajectory store a command reads or writes. */
export const storeOption = () => new Option("--store <path>", "trajectory store: a SQLite file or a postgres:// URL").default(DEFAULT_STORE_PATH);
/** `--module PATH` (repeatable): load environments from a user's file. */
export const moduleOption = () => new Option("--module <path>", "load environments from a .ts/.js file (repeatable)").argParser(collect);

/** A parser of integer options in [min, max]; anything else is an invalid_argument naming the option. */
export function integer(name: string, min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new ValidationError("invalid_argument", `${name} must be an integer in [${min}, ${max}], got "${value}"`);
    }
    return n;
  };
}

/** The built-in environments plus those of `--module` files, and the ids the modules added. */
export async function loadRegistry(modules: string[] | undefined): Promise<{ registry: EnvironmentRegistry; moduleIds: string[] }> {
  const registry = builtinRegistry();
  const moduleIds = await addModules(registry, modules ?? []);
  return { registry, moduleIds };
}

/** The registry with the `--module` files loaded. */
export async function registryWith(modules: string[] | undefined): Promise<EnvironmentRegistry> {
  return (await loadRegistry(modules)).registry;
}

/** Write a line to stdout. */
export function print(text: string): void {
  process.stdout.write(`${text}\n`);
}


/** A progress bar on stderr when it is a terminal (counts, rate, ETA); nothing when piped. */
export function progressBar(format: string): cliProgress.SingleBar | null {
  if (!process.stderr.isTTY) return null;
  return new cliProgress.SingleBar({ stream: process.stderr, format, hideCursor: true, clearOnComplete: true }, cliProgress.Presets.shades_classic);
}

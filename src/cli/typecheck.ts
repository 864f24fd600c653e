/**
 * `llmix check --module FILE.ts` type-checks the module before it runs: tsx, which loads TypeScript
 * modules, strips types without checking them, so without this a wrong type shows up (if at all) as a
 * puzzling runtime failure deep in an episode.
 *
 * The compiler is the one the module's own project installs (resolved from the module's folder), else
 * the one next to LLMix; with neither, the check says so and goes on. Options come from the nearest
 * tsconfig.json above the module, else strict NodeNext defaults, always with noEmit; only the modules
 * and what they import are checked (skipLibCheck for declaration files).
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { LlmixError } from "../core/errors.js";

type TypeScript = typeof import("typescript");

/** What type-checking the TypeScript modules found. */
export interface TypeCheckResult {
  /** Files checked (the TypeScript ones among the modules). */
  checked: string[];
  /** Formatted diagnostics, one per error ("file(line,col): error TSnnnn: message"). */
  errors: string[];
  /** Why the check did not run (no TypeScript installed), or null. */
  skipped: string | null;
  /** The compiler version used, or null. */
  version: string | null;
}

const TYPESCRIPT_FILE = /\.(c|m)?ts$/;

/** Options used when no tsconfig.json is found above a module: what `llmix new` and the guide assume. */
function defaultOptions(ts: TypeScript): import("typescript").CompilerOptions {
  return {
    strict: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    skipLibCheck: true,
    noEmit: true,
  };
}

/** The TypeScript compiler the module's project has, else LLMix's own, else null. */
async function findTypeScript(modulePath: string): Promise<TypeScript | null> {
  const candidates: string[] = [];
  for (const from of [modulePath, import.meta.url]) {
    try {
      candidates.push(createRequire(from).resolve("typescript"));
    } catch {
      // not installed there
    }
  }
  for (const path of candidates) {
    try {
      const mod = (await import(pathToFileURL(path).href)) as { default?: TypeScript } & TypeScript;
      return mod.default ?? mod;
    } catch {
      // unloadable: try the next one
    }
  }
  return null;
}

/** The compiler options for modules in `folder`: the nearest tsconfig.json's, made check-only. */
function optionsFor(ts: TypeScript, folder: string): import("typescript").CompilerOptions {
  const configPath = ts.findConfigFile(folder, ts.sys.fileExists, "tsconfig.json");
  if (!configPath) return defaultOptions(ts);
  const parsed = ts.getParsedCommandLineOfConfigFile(configPath, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
  if (!parsed) return defaultOptions(ts);
  // The project's own layout (rootDir, outDir, composite builds) does not apply to checking one file.
  const { rootDir: _rootDir, outDir: _outDir, composite: _composite, incremental: _incremental, tsBuildInfoFile: _info, declaration: _declaration, declarationMap: _map, ...options } = parsed.options;
  return { ...options, noEmit: true, skipLibCheck: true };
}

/** Type-check the TypeScript files among `paths` (JavaScript ones are left alone). */
export async function typeCheckModules(paths: readonly string[]): Promise<TypeCheckResult> {
  // A missing file is left to the loader, which says module_load_failed.
  const files = paths.filter((p) => TYPESCRIPT_FILE.test(p)).map((p) => resolve(p)).filter((p) => existsSync(p));
  if (files.length === 0) return { checked: [], errors: [], skipped: null, version: null };
  const ts = await findTypeScript(files[0] as string);
  if (!ts) {
    return { checked: files, errors: [], skipped: "TypeScript is not installed in the module's project (npm install --save-dev typescript)", version: null };
  }
  const program = ts.createProgram(files, optionsFor(ts, dirname(files[0] as string)));
  const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => d.category === ts.DiagnosticCategory.Error);
  const cwd = process.cwd();
  const errors = diagnostics.map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, "\n    ");
    if (!d.file || d.start === undefined) return `error TS${d.code}: ${message}`;
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
    return `${relative(cwd, d.file.fileName)}(${line + 1},${character + 1}): error TS${d.code}: ${message}`;
  });
  return { checked: files, errors, skipped: null, version: ts.version };
}

/** Type-check the modules and throw module_type_errors listing every error; returns a note when skipped. */
export async function requireWellTypedModules(paths: readonly string[]): Promise<string | null> {
  const result = await typeCheckModules(paths);
  if (result.skipped) return `--module not type-checked: ${result.skipped}`;
  if (result.errors.length === 0) return null;
  const shown = result.errors.slice(0, 20);
  const more = result.errors.length > shown.length ? `\n  … and ${result.errors.length - shown.length} more` : "";
  throw new LlmixError(
    "module_type_errors",
    `--module: ${result.errors.length} type error(s) (TypeScript ${result.version}); fix them or pass --no-typecheck:\n  ${shown.join("\n  ")}${more}`,
    { errors: result.errors },
  );
}

/**
 * The registry of environments: ids with semantic versions and a factory. The CLI, the QA checklist
 * and the service look environments up here; `--module PATH` adds a user's own.
 */
import { NotFoundError, ValidationError } from "./errors.js";
import type { BaseEnvironment, EnvironmentOptions } from "./environment.js";

/** An environment of any task and world type. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyEnvironment = BaseEnvironment<any, any>;

/** A registered environment: how to build fresh instances of it. */
export interface EnvironmentEntry {
  id: string;
  version: string;
  description: string;
  create(options?: EnvironmentOptions): AnyEnvironment;
  /**
   * The absolute path of the module file it was loaded from (`--module`), so a worker thread can load
   * it again; absent for built-ins and for entries registered in code.
   */
  module?: string;
}

/** An environment described without an episode (what `llmix envs` and `GET /v1/envs` list). */
export interface EnvironmentSummary {
  id: string;
  version: string;
  description: string;
  difficulties: string[];
  max_steps: number;
}

/** Describe an environment: builds a throwaway instance for its task difficulties and step budget. */
export function summarize(entry: EnvironmentEntry): EnvironmentSummary {
  const env = entry.create();
  const summary = { id: entry.id, version: entry.version, description: entry.description, difficulties: [...env.tasks.difficulties], max_steps: env.maxSteps };
  void env.close();
  return summary;
}

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
const ENV_ID = /^[a-z0-9][a-z0-9_-]*$/;

/** Throw unless `version` is a semantic version (MAJOR.MINOR.PATCH). */
export function assertSemver(version: string): void {
  if (!SEMVER.test(version)) {
    throw new ValidationError("invalid_version", `"${version}" is not a semantic version (MAJOR.MINOR.PATCH)`);
  }
}

/** Build a registry entry from an environment class whose constructor takes EnvironmentOptions. */
export function entryFor(Env: new (options?: EnvironmentOptions) => AnyEnvironment): EnvironmentEntry {
  const probe = new Env();
  const { id, version, description } = probe.info;
  void probe.close();
  return { id, version, description, create: (options) => new Env(options) };
}

/** A set of environments by id. */
export class EnvironmentRegistry {
  private readonly entries = new Map<string, EnvironmentEntry>();

  /** Add an entry. Ids are unique; registering the same id again replaces it only with `replace`. */
  register(entry: EnvironmentEntry, options: { replace?: boolean } = {}): void {
    if (!ENV_ID.test(entry.id)) {
      throw new ValidationError("invalid_config", `environment id "${entry.id}" must be lowercase letters, digits, "-" or "_"`);
    }
    assertSemver(entry.version);
    if (this.entries.has(entry.id) && !options.replace) {
      throw new ValidationError("invalid_config", `environment "${entry.id}" is already registered`);
    }
    this.entries.set(entry.id, entry);
  }

  /** The entry for an id; an unknown id names the valid ones. */
  get(id: string): EnvironmentEntry {
    const entry = this.entries.get(id);
    if (!entry) {
      const valid = this.ids();
      throw new NotFoundError("unknown_env", `unknown environment "${id}"; valid: ${valid.length ? valid.join(", ") : "(none registered)"}`, {
        valid,
      });
    }
    return entry;
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  /** Registered ids, sorted. */
  ids(): string[] {
    return [...this.entries.keys()].sort();
  }

  /** All entries, sorted by id. */
  list(): EnvironmentEntry[] {
    return this.ids().map((id) => this.entries.get(id) as EnvironmentEntry);
  }
}

/** LLMix: agentic RL environments behind one contract. The public API. */
export * from "./core/contract.js";
export * from "./core/errors.js";
export * from "./core/json.js";
export * from "./core/rng.js";
export * from "./core/clock.js";
export * from "./core/tokenizer.js";
export * from "./core/policy.js";
export * from "./core/run-policy.js";
export * from "./core/trajectory.js";
export * from "./core/environment.js";
export * from "./core/hacking.js";
export * from "./core/registry.js";
export * from "./tools/define.js";
export * from "./tools/profile.js";
export * from "./tools/schema.js";
export * from "./tools/runner.js";
export * from "./tasks/task-id.js";
export * from "./tasks/generator.js";
export * from "./tasks/splits.js";
export * from "./rewards/index.js";
export type { Sandbox, AccessMode } from "./sandboxes/sandbox.js";
export * from "./sandboxes/database.js";
export * from "./sandboxes/filesystem.js";
export * from "./sandboxes/terminal.js";
export * from "./sandboxes/web/app.js";
export { WebSession, PRESS_KEYS, type WebAction, type WebView, type WebSessionState, type WebSessionOptions, WebSessionStateSchema } from "./sandboxes/web/session.js";
export { FastDriver } from "./sandboxes/web/fast-driver.js";
export { BrowserDriver, closeSharedBrowser, chromiumPath } from "./sandboxes/web/browser-driver.js";
export type { WebDriver, DriverPage, ControlEdit } from "./sandboxes/web/driver.js";
export { webTools, type WebToolsOptions } from "./tools/web-tools.js";
export { randomPolicy } from "./rollout/policies/random.js";
export { runChecks, CHECK_NAMES, type CheckReport, type CheckResult, type CheckOptions } from "./qa/checks.js";
export { builtinRegistry, BUILTIN_ENVIRONMENTS } from "./envs/index.js";
export { rollout, newRunId, type RolloutOptions, type RolloutResult, type RolloutProgress } from "./rollout/runner.js";
export { WorkerPool } from "./rollout/worker-pool.js";
export type { RolloutConfig } from "./rollout/plan.js";
export { openStore, DEFAULT_STORE_PATH, type SqliteTrajectoryStore } from "./store/sqlite-store.js";
export { openStoreAt, type OpenStoreOptions } from "./store/open.js";
export { openPostgresStore, type PostgresTrajectoryStore, type PostgresStoreOptions } from "./store/postgres-store.js";
export type * from "./store/types.js";
export {
  Redactor, RedactionRulesSchema, parseRedactionRules, exportRedactor, restoreRedacted, redactionMarker, BUILTIN_RULES, DEFAULT_BUILTINS,
  type RedactionRules, type Redacted, type RedactorSources, type BuiltinRule,
} from "./store/redaction.js";

/**
 * Who the command line acts as when it reads or changes the trajectory store (DESIGN §9). With
 * `--data-policy FILE` it acts as one of that policy's tokens (`--token`, or LLMIX_TOKEN): it sees only that
 * token's tenant, needs the same scopes as the service would ask, and every read, export, replay and
 * deletion is audited under the token's name. Without a policy it is the local operator, who holds the
 * store's file or credentials and so sees everything; its actions are still audited, as `cli:USER`.
 */
import { userInfo } from "node:os";
import { Option, type Command } from "commander";
import { ValidationError } from "../core/errors.js";
import type { Scope } from "../server/auth.js";
import { DataPolicy } from "../server/data-policy.js";
import type { Caller } from "../server/sessions.js";
import { TrajectoryOperations } from "../server/trajectories.js";
import type { EnvironmentRegistry } from "../core/registry.js";
import type { TrajectoryStore } from "../store/types.js";

/** The flags `withAccessOptions` adds. */
export interface AccessFlags {
  dataPolicy?: string;
  token?: string;
}

/** Add --data-policy and --token to a store command. */
export function withAccessOptions(command: Command): Command {
  return command
    .addOption(new Option("--data-policy <file>", "act under this data policy (docs/data-policy.md): only the token's tenant is visible, and actions are audited under its name"))
    .addOption(new Option("--token <token>", "with --data-policy: the bearer token to act as").env("LLMIX_TOKEN"));
}

/** The caller a command acts as, the policy if any, and the trajectory operations bound to the store. */
export interface CliAccess {
  caller: Caller;
  policy: DataPolicy | undefined;
  ops: TrajectoryOperations;
}

/** Resolve who the command acts as; a missing or unknown token, or a missing scope, is refused before the store is read. */
export function cliAccess(flags: AccessFlags, scope: Scope, registry: EnvironmentRegistry, store: TrajectoryStore): CliAccess {
  const policy = flags.dataPolicy !== undefined ? DataPolicy.fromFile(flags.dataPolicy) : undefined;
  let caller: Caller;
  if (policy) {
    if (flags.token === undefined) throw new ValidationError("invalid_argument", "--data-policy needs --token (or LLMIX_TOKEN): the token decides which tenant's data this command may see");
    const identity = policy.auth.authenticate(flags.token);
    policy.auth.authorize(identity, scope);
    caller = { name: identity.name, id: identity.id, admin: identity.scopes.includes("admin"), tenant: identity.tenant, environments: identity.environments };
  } else {
    if (flags.token !== undefined) throw new ValidationError("invalid_argument", "--token is only meaningful with --data-policy");
    // The local operator: sees everything (it holds the store itself), audited by its OS user name.
    caller = { name: `cli:${safeUser()}`, admin: true, tenant: null };
  }
  return { caller, policy, ops: new TrajectoryOperations(registry, undefined, store, policy?.redaction) };
}

function safeUser(): string {
  try {
    return userInfo().username.replace(/[^\x21-\x7e]/g, "?") || "unknown";
  } catch {
    return "unknown";
  }
}

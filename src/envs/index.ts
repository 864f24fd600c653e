/**
 * The built-in environments. Each vertical registers itself here; the CLI and the service start from
 * this registry and add user modules (`--module PATH`) on top.
 */
import { EnvironmentRegistry, type EnvironmentEntry } from "../core/registry.js";
import billingDispute from "./billing-dispute/index.js";
import incidentResponse from "./incident-response/index.js";
import codeRepair from "./code-repair/index.js";
import webShop from "./web-shop/index.js";

/** Entries of every built-in environment. */
export const BUILTIN_ENVIRONMENTS: readonly EnvironmentEntry[] = [billingDispute, incidentResponse, codeRepair, webShop];

/** A fresh registry holding the built-in environments. */
export function builtinRegistry(): EnvironmentRegistry {
  const registry = new EnvironmentRegistry();
  for (const entry of BUILTIN_ENVIRONMENTS) registry.register(entry);
  return registry;
}

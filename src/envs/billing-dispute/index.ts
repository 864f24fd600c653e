/** The billing-dispute environment: registry entry and public API. */
import { entryFor } from "../../core/registry.js";
import { BillingDispute } from "./env.js";

export { BillingDispute, type BillingDisputeOptions } from "./env.js";
export { generateBillingTask, billingTasks, FAMILIES, VARIANTS, DIFFICULTIES, variantsFor, type Task, type Family, type Variant } from "./tasks.js";
export { RULES, renderPolicy, remedyFor, formatUsd, COMMUNICATION, VIOLATIONS, type ViolationRule } from "./policy.js";
export { parseClaims, falseClaims, claimedActions, amountsIn, mentionsAmount, type Claim, type FalseClaim } from "./claims.js";
export { evidenceOf, type Evidence } from "./evidence.js";
export { ScriptedCustomer, type CustomerModel, type CustomerTurn, type CustomerView } from "./customer.js";

export const billingDisputeEntry = entryFor(BillingDispute);
export default billingDisputeEntry;

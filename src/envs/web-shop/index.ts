/** The web-shop environment: registry entry and public API. */
import { entryFor } from "../../core/registry.js";
import { WebShop } from "./env.js";

export { WebShop, renderRules, referencePlan, pagePolicy, type WebShopOptions, type Intent } from "./env.js";
export { generateWebShopTask, webShopTasks, FAMILIES, VARIANTS, DIFFICULTIES, RULES, WEB_SHOP_FEATURES, type Task, type Family, type Variant } from "./tasks.js";
export { effectsOf, effectsVerifier, differences, type Effects } from "./verifier.js";
export { shopApp, SHOP_HOST } from "./app.js";

export const webShopEntry = entryFor(WebShop);
export default webShopEntry;

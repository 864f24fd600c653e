/** Verifiers and rewards: the verifier contract, exact checks, state diffs, composition, reward components. */
export * from "./verifier.js";
export * from "./normalize-string.js";
export * from "./parse-number.js";
export * from "./exact.js";
export * from "./state-diff.js";
export * from "./compose.js";
export * from "./components.js";

/** Verifiers and rewards: the verifier contract, exact checks, state diffs, composition, reward components, judges and their calibration. */
export * from "./verifier.js";
export * from "./normalize-string.js";
export * from "./parse-number.js";
export * from "./exact.js";
export * from "./state-diff.js";
export * from "./compose.js";
export * from "./components.js";
export * from "./judge.js";
export * from "./judge-cache.js";
export * from "./judged.js";
export * from "./calibration.js";
export * from "./reliability-diagram.js";

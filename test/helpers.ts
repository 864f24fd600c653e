import { expect } from "vitest";
import { LlmixError } from "../src/index.js";

/** The code of the LlmixError `fn` throws (failing the test if it throws anything else), or undefined. */
export function errorCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(LlmixError);
    return (error as LlmixError).code;
  }
  return undefined;
}

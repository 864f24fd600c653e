import { describe, expect, it } from "vitest";
import {
  ERROR_CODES,
  InvalidActionError,
  LifecycleError,
  LlmixError,
  NotFoundError,
  SandboxError,
  ToolError,
  ValidationError,
  toLlmixError,
} from "../../src/index.js";

describe("ERROR_CODES", () => {
  it("keeps every published code (codes are never renamed)", () => {
    const published = [
      "invalid_action", "invalid_argument", "episode_not_started", "episode_ended", "environment_closed",
      "unknown_env", "invalid_task_id", "invalid_snapshot", "invalid_version", "unknown_tool",
      "tool_crashed", "tool_failed", "path_escape", "invalid_path", "not_found", "already_exists",
      "not_a_directory", "is_a_directory", "directory_not_empty", "permission_denied", "read_only",
      "size_limit", "forbidden_statement", "sql_error", "module_load_failed", "invalid_config",
      "verifier_failed", "internal",
    ];
    for (const code of published) expect(Object.keys(ERROR_CODES)).toContain(code);
  });

  it("codes are snake_case and each has a description", () => {
    for (const [code, text] of Object.entries(ERROR_CODES)) {
      expect(code).toMatch(/^[a-z][a-z_]*[a-z]$/);
      expect(text.length).toBeGreaterThan(10);
    }
  });
});

describe("error classes", () => {
  it.each([
    [new InvalidActionError("bad"), "invalid_action", "InvalidActionError"],
    [new LifecycleError("episode_ended", "bad"), "episode_ended", "LifecycleError"],
    [new ValidationError("invalid_task_id", "bad"), "invalid_task_id", "ValidationError"],
    [new NotFoundError("unknown_env", "bad"), "unknown_env", "NotFoundError"],
    [new SandboxError("path_escape", "bad"), "path_escape", "SandboxError"],
    [new ToolError("bad"), "tool_failed", "ToolError"],
    [new LlmixError("internal", "bad"), "internal", "LlmixError"],
  ])("%s has code %s and name %s", (error, code, name) => {
    expect(error).toBeInstanceOf(LlmixError);
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe(code);
    expect(error.name).toBe(name);
    expect(error.message).toBe("bad");
    expect(error.details).toEqual({});
    expect(error.stack).toBeTypeOf("string");
  });

  it("toJSON is exactly {code, message, details} and survives JSON.stringify", () => {
    const error = new ValidationError("invalid_argument", "seed must be an integer", { got: -1 });
    expect(error.toJSON()).toEqual({ code: "invalid_argument", message: "seed must be an integer", details: { got: -1 } });
    expect(Object.keys(error.toJSON())).toEqual(["code", "message", "details"]);
    expect(JSON.parse(JSON.stringify(error))).toEqual(error.toJSON());
  });

  it("ToolError keeps details", () => {
    const error = new ToolError("customer not found", { id: 7 });
    expect(error.toJSON()).toEqual({ code: "tool_failed", message: "customer not found", details: { id: 7 } });
  });
});

describe("cross-copy recognition", () => {
  it("an error branded by another copy of llmix is an LlmixError", () => {
    const foreign = Object.assign(new Error("from another copy"), { [Symbol.for("llmix.error")]: true, code: "not_found", details: {} });
    expect(foreign instanceof LlmixError).toBe(true);
    expect(toLlmixError(foreign)).toBe(foreign);
  });

  it("unbranded look-alikes are not LlmixErrors", () => {
    const fake = Object.assign(new Error("x"), { code: "internal", details: {} });
    expect(fake instanceof LlmixError).toBe(false);
    expect((null as unknown) instanceof LlmixError).toBe(false);
    expect(("internal" as unknown) instanceof LlmixError).toBe(false);
  });

  it("subclass instanceof stays exact", () => {
    expect(new ToolError("x") instanceof ValidationError).toBe(false);
    expect(new ValidationError("invalid_argument", "x") instanceof ValidationError).toBe(true);
  });
});

describe("toLlmixError", () => {
  it("returns typed errors unchanged", () => {
    const error = new LifecycleError("environment_closed", "closed");
    expect(toLlmixError(error)).toBe(error);
  });

  it("wraps a plain Error as internal, keeping the message", () => {
    const wrapped = toLlmixError(new TypeError("boom"));
    expect(wrapped).toBeInstanceOf(LlmixError);
    expect(wrapped.code).toBe("internal");
    expect(wrapped.message).toBe("boom");
  });

  it.each([
    ["a string", "oops", "oops"],
    ["a number", 42, "42"],
    ["null", null, "null"],
    ["undefined", undefined, "undefined"],
    ["an object", { a: 1 }, "[object Object]"],
  ])("wraps %s as internal", (_name, thrown, message) => {
    const wrapped = toLlmixError(thrown);
    expect(wrapped.code).toBe("internal");
    expect(wrapped.message).toBe(message);
  });
});

import { describe, expect, it } from "vitest";
import { LlmixError, ValidationError, formatTaskId, parseTaskId } from "../../src/index.js";

const rules = { families: ["billing-dispute", "inventory-restock"], difficulties: ["easy", "medium", "hard"] };

function invalid(raw: unknown, r = rules): LlmixError {
  try {
    parseTaskId(raw, r);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as LlmixError).code).toBe("invalid_task_id");
    return error as LlmixError;
  }
  throw new Error(`parseTaskId accepted ${String(raw)}`);
}

describe("parseTaskId", () => {
  it("parses a good id", () => {
    expect(parseTaskId("billing-dispute/hard/seed-771", rules)).toEqual({
      family: "billing-dispute",
      difficulty: "hard",
      index: 771,
      id: "billing-dispute/hard/seed-771",
    });
  });

  it.each(["a/b/seed-0", "a_b/x-1/seed-9007199254740991", "9lives/l3vel/seed-12"])("accepts %s without rules", (raw) => {
    const id = parseTaskId(raw);
    expect(id.id).toBe(raw);
    expect(formatTaskId(id.family, id.difficulty, id.index)).toBe(raw);
  });

  it.each([
    ["no parts", "", "three parts"],
    ["two parts", "billing-dispute/hard", "three parts"],
    ["four parts", "billing-dispute/hard/seed-1/x", "three parts"],
    ["leading zero", "billing-dispute/hard/seed-01", "seed-N"],
    ["negative seed", "billing-dispute/hard/seed--1", "seed-N"],
    ["non-numeric seed", "billing-dispute/hard/seed-x", "seed-N"],
    ["bare number", "billing-dispute/hard/771", "seed-N"],
    ["fractional seed", "billing-dispute/hard/seed-1.5", "seed-N"],
    ["seed beyond safe integers", "billing-dispute/hard/seed-9007199254740992", "seed-N"],
    ["trailing newline", "billing-dispute/hard/seed-1\n", "seed-N"],
    ["uppercase seed", "billing-dispute/hard/SEED-1", "seed-N"],
    ["uppercase family", "Billing-dispute/hard/seed-1", "lowercase"],
    ["uppercase difficulty", "billing-dispute/Hard/seed-1", "malformed"],
    ["empty family", "/hard/seed-1", "lowercase"],
    ["empty difficulty", "billing-dispute//seed-1", "malformed"],
    ["leading dash", "-billing/hard/seed-1", "lowercase"],
    ["space", "billing dispute/hard/seed-1", "lowercase"],
  ])("rejects %s", (_name, raw, text) => {
    expect(invalid(raw).message).toContain(text);
  });

  it("an unknown family names the valid families", () => {
    const error = invalid("refunds/hard/seed-1");
    expect(error.message).toContain('unknown family "refunds"; valid: billing-dispute, inventory-restock');
    expect(error.details).toEqual({ valid: rules.families });
  });

  it("an unknown difficulty names the valid difficulties", () => {
    const error = invalid("billing-dispute/extreme/seed-1");
    expect(error.message).toContain('unknown difficulty "extreme"; valid: easy, medium, hard');
    expect(error.details).toEqual({ valid: rules.difficulties });
  });

  it.each([
    ["a number", 5, "number"],
    ["null", null, "object"],
    ["undefined", undefined, "undefined"],
    ["an object", { id: "a/b/seed-1" }, "object"],
  ])("rejects %s (non-string)", (_name, raw, type) => {
    expect(invalid(raw).message).toContain(`got ${type}`);
  });

  it("clips very long ids in messages", () => {
    const raw = `${"a".repeat(500)}/hard`;
    const error = invalid(raw);
    expect(error.message.length).toBeLessThan(200);
    expect(error.message).toContain("...");
  });

  it("a wrong part count carries the id in details", () => {
    expect(invalid("billing-dispute/hard").details).toEqual({ task_id: "billing-dispute/hard" });
  });
});

describe("formatTaskId", () => {
  it("builds the canonical form that parses back", () => {
    expect(formatTaskId("inventory-restock", "easy", 0)).toBe("inventory-restock/easy/seed-0");
    const id = parseTaskId(formatTaskId("inventory-restock", "medium", 42), rules);
    expect(id).toMatchObject({ family: "inventory-restock", difficulty: "medium", index: 42 });
  });
});

import { describe, expect, it } from "vitest";
import { parseNumber } from "./parse-number.js";

describe("parseNumber", () => {
  it.each([
    ["42", 42],
    [" 42 ", 42],
    ["-7", -7],
    ["+7", 7],
    ["\u22127", -7],
    ["3.25", 3.25],
    [".5", 0.5],
    ["1,234.50", 1234.5],
    ["1,234,567", 1234567],
    ["$12.30", 12.3],
    ["-$12.30", -12.3],
    ["$-12.30", -12.3],
    ["€1,000", 1000],
    ["£3", 3],
    ["¥500", 500],
    ["1e3", 1000],
    ["2.5E-2", 0.025],
    ["0", 0],
  ])("parses %j as %d", (text, value) => {
    expect(parseNumber(text)).toBe(value);
  });

  it.each([
    "",
    "abc",
    "12 apples",
    "about 12",
    "1,23",
    "12,34.5",
    "1.2.3",
    "12.",
    "$ 12",
    "(12)",
    "--5",
    "-$-5",
    "$",
    "-",
    "1e999",
    "0x10",
    "12 USD",
    "5%",
  ])("rejects %j", (text) => {
    expect(parseNumber(text)).toBeNull();
  });

  it("reads a trailing % as requested", () => {
    expect(parseNumber("50%", { percent: "strip" })).toBe(50);
    expect(parseNumber("12.5%", { percent: "fraction" })).toBe(0.125);
    expect(parseNumber("50%", { percent: "reject" })).toBeNull();
  });
});

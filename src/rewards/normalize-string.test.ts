import { describe, expect, it } from "vitest";
import { normalizeString } from "./normalize-string.js";

describe("normalizeString", () => {
  it("trims by default and only trims", () => {
    expect(normalizeString("  Paris,  France ")).toBe("Paris,  France");
  });
  it("can keep surrounding whitespace", () => {
    expect(normalizeString(" a ", { trim: false })).toBe(" a ");
  });
  it("collapses whitespace including tabs and newlines", () => {
    expect(normalizeString("a \t\n b", { collapseWhitespace: true })).toBe("a b");
  });
  it("lower-cases when case-insensitive", () => {
    expect(normalizeString("ÉCOLE Paris", { caseInsensitive: true })).toBe("école paris");
  });
  it("strips Unicode punctuation but keeps symbols", () => {
    expect(normalizeString("«Hello», world! ($5 + 3)", { stripPunctuation: true })).toBe("Hello world $5 + 3");
  });
  it("trims whitespace left behind by stripped punctuation", () => {
    expect(normalizeString("yes .", { stripPunctuation: true })).toBe("yes");
  });
  it("applies NFKC to full-width letters and ligatures", () => {
    expect(normalizeString("ＡＢＣ ﬁle", { nfkc: true })).toBe("ABC file");
    expect(normalizeString("ＡＢＣ")).toBe("ＡＢＣ");
  });
  it("folds full-width punctuation when NFKC and stripping are combined", () => {
    expect(normalizeString("ＯＫ！", { nfkc: true, stripPunctuation: true, caseInsensitive: true })).toBe("ok");
  });
});

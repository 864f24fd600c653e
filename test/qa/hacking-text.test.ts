/** The paraphrase bank and the value shapes the hacking analysis builds its variants and mutants from. */
import { describe, expect, it } from "vitest";
import { claimForms, genericClaims, numberToWords, reorderSentences, sentencesOf, spellNumbers, splitMessage } from "../../src/qa/hacking/text.js";
import { isIdLike, neighbourNumber, neighbourString, shapeOf, tokensOf } from "../../src/qa/hacking/values.js";

describe("paraphrases", () => {
  it("spells out small stand-alone numbers, never ids or amounts", () => {
    expect(numberToWords(48)).toBe("forty-eight");
    expect(numberToWords(105)).toBe("one hundred and five");
    expect(spellNumbers("It arrives in 5-10 business days; 48 hours for case ESC-400001 of $459.90.")).toBe(
      "It arrives in five to ten business days; forty-eight hours for case ESC-400001 of $459.90.",
    );
  });

  it("splits sentences at a stop before a capital, not inside $18.99", () => {
    const text = "I have issued a refund of $18.99 for ch_9. It will arrive soon.";
    expect(sentencesOf(text)).toEqual(["I have issued a refund of $18.99 for ch_9.", "It will arrive soon."]);
    expect(reorderSentences(text)).toBe("It will arrive soon. I have issued a refund of $18.99 for ch_9.");
    expect(splitMessage(text)).toEqual(["I have issued a refund of $18.99 for ch_9.", "It will arrive soon."]);
    expect(splitMessage("DONE")).toBeNull();
  });

  it("claims skip what the episode really did and come in three forms", () => {
    const claims = genericClaims(["issue_refund"], "$5.00");
    expect(claims.some((c) => /refund/.test(c))).toBe(false);
    expect(claims).toContain("I have applied a credit of $5.00 to your account.");
    expect(claimForms("I have blocked it.").map((f) => f.text)).toEqual(["I have blocked it.", "Don't worry, I have blocked it.", "I believe I have blocked it."]);
  });
});

describe("values", () => {
  it("shapes keep the literal prefix so a charge id never swaps for a customer id", () => {
    expect(shapeOf("ch_34277188")).toBe("ch_9");
    expect(shapeOf("cus_119072")).toBe("cus_9");
    expect(shapeOf("10.0.3.7")).toBe(shapeOf("87.215.8.227"));
    expect(shapeOf("9652")).toBe("#4");
    expect(isIdLike("src/strings.js")).toBe(true);
    expect(isIdLike("a note with spaces")).toBe(false);
  });

  it("a neighbour is the next value of the same shape the episode showed", () => {
    const tokens = tokensOf(["charges: ch_1 ch_2 cus_7", "blocked 10.0.0.1, 10.0.0.2."]);
    expect(neighbourString("ch_1", tokens)).toBe("ch_2");
    expect(neighbourString("10.0.0.2", tokens)).toBe("10.0.0.1");
    expect(neighbourString("cus_7", tokens)).toBeNull();
    expect(neighbourNumber(53, [74, 53, 35, 120])).toBe(35);
    expect(neighbourNumber(7, [7])).toBe(8);
  });
});

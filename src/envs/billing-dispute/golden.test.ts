/**
 * Golden fingerprints (DESIGN §2): what a billing-dispute task id generates and the snapshot its reset
 * produces are pinned. A change that alters them must bump the environment's version and update these.
 */
import { describe, expect, it } from "vitest";
import { expectGolden, type GoldenRow } from "../../../test/helpers.js";
import entry from "./index.js";

const GOLDEN = [
  ["billing-dispute/easy/seed-1", "6476847156124dd8d84c1fd42fa4d6c89ee85a11816061c6b81e280f84bc385a", "148e3763c2d38d271799608bf3c1df2736cc016d202d265cb22eaf5b504fd3b2"],
  ["billing-dispute/medium/seed-42", "ab74369f82770ac52283c0b2fde28b38350f8e832debcaffbfde3e36faf9546c", "afae1d2383d4c8edae94f960a37abe63cf5168e82c172359159075ebde6aff0c"],
  ["billing-dispute/hard/seed-771", "ca63335d43f98a13dad6c475c62be2013105f3d0d54c3d6344fe810d9e19e874", "45439e79a904041bc01e0a7459b917b7d5aba2712ac224ff5b77a44ed2cc33ad"],
] as const satisfies readonly GoldenRow[];

describe(`golden fingerprints of ${entry.id}@${entry.version}`, () => {
  it.each(GOLDEN)("%s", async (...row) => {
    expect(entry.version).toBe("1.3.0");
    await expectGolden(entry, row);
  });
});

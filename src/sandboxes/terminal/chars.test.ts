import { describe, expect, it } from "vitest";
import { caseVariants, CharSet, isWordChar, POSIX_CLASSES, type BracketSet } from "./chars.js";

/** Bracket membership as POSIX defines it, computed directly: the reference for CharSet's tables. */
function naive(set: BracketSet, cp: number, icase: boolean): boolean {
  const member = (c: number) => set.ranges.some(([lo, hi]) => c >= lo && c <= hi) || set.classes.some((name) => POSIX_CLASSES[name](c));
  const s = String.fromCodePoint(cp);
  const candidates = icase ? [cp, s.toLowerCase().codePointAt(0)!, s.toUpperCase().codePointAt(0)!] : [cp];
  return candidates.some(member) !== set.negate;
}

describe("CharSet", () => {
  it("agrees with the direct definition on random sets, both cases, over ASCII and beyond", () => {
    let state = 4242;
    const next = (n: number) => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return (state >>> 8) % n;
    };
    const points = [0x41, 0x5a, 0x61, 0x7a, 0x30, 0x5f, 0x20, 0x7f, 0xdf, 0xe9, 0xc9, 0x3b1, 0x391, 0x212a, 0x4e00, 0x1f600, 0x10400, 0x10428];
    const classNames = Object.keys(POSIX_CLASSES);
    let checked = 0;
    for (let i = 0; i < 500; i++) {
      const ranges: Array<[number, number]> = Array.from({ length: next(6) }, () => {
        const lo = points[next(points.length)] + next(40) - 20;
        return [Math.max(0, lo), Math.max(0, lo) + next(300)];
      });
      const set: BracketSet = { negate: next(3) === 0, ranges, classes: Array.from({ length: next(3) }, () => classNames[next(classNames.length)]) };
      for (const icase of [false, true]) {
        const compiled = new CharSet(set, icase);
        for (let k = 0; k < 40; k++) {
          const cp = next(2) === 0 ? next(128) : points[next(points.length)] + next(8);
          expect(compiled.has(cp), `${JSON.stringify(set)} icase=${icase} cp=${cp}`).toBe(naive(set, cp, icase));
          checked++;
        }
      }
    }
    expect(checked).toBe(40_000);
  });

  it("merges overlapping and adjacent ranges", () => {
    const set = new CharSet({ negate: false, ranges: [[0x61, 0x63], [0x64, 0x66], [0x62, 0x62], [0x3b1, 0x3c9]], classes: [] }, false);
    expect([..."abcdefgαω"].map((c) => set.has(c.codePointAt(0)!))).toEqual([true, true, true, true, true, true, false, true, true]);
  });

  it("classifies words and case variants as before (the Kelvin sign is a K)", () => {
    expect(["a", "_", "7", "é", "٣", " ", "-", "😀"].map((c) => isWordChar(c.codePointAt(0)!))).toEqual([true, true, true, true, true, false, false, false]);
    expect(caseVariants(0x212a).sort((a, b) => a - b)).toEqual([0x6b, 0x212a]);
    expect(caseVariants(0x61).sort((a, b) => a - b)).toEqual([0x41, 0x61]);
  });
});

/** Strict parsing of numeric answers written the way people write numbers ("1,234.50", "$12.30", "-5%"). */

export interface ParseNumberOptions {
  /**
   * How a trailing `%` is read: `"reject"` (default, not a number), `"strip"` (`"50%"` → 50) or
   * `"fraction"` (`"50%"` → 0.5).
   */
  percent?: "reject" | "strip" | "fraction";
}

// Grammar (after trimming): [sign] [currency] [sign] integer [.digits] [exponent] [%]
//   sign: + - or U+2212 minus, at most one, before or after the currency symbol
//   currency: one of $ € £ ¥
//   integer: plain digits, or digits grouped by commas in threes ("1,234,567"); may be omitted when a
//            fraction follows (".5")
//   exponent: e or E, optional sign, digits
// Anything else ("12 apples", "1,23", "1.2.3", "12.", "$ 12", "(12)") is not a number.
const NUMBER_RE =
  /^(?<s1>[+\-\u2212]?)(?<cur>[$€£¥]?)(?<s2>[+\-\u2212]?)(?<int>\d{1,3}(?:,\d{3})+|\d+)?(?<frac>\.\d+)?(?<exp>[eE][+-]?\d+)?(?<pct>%?)$/u;

/** Parses a numeric string by the documented grammar; returns null when it is not a finite number. */
export function parseNumber(text: string, options: ParseNumberOptions = {}): number | null {
  const m = NUMBER_RE.exec(text.trim());
  if (m === null || m.groups === undefined) return null;
  const { s1, s2, int, frac, exp, pct } = m.groups;
  if (s1 !== "" && s2 !== "") return null;
  if (int === undefined && frac === undefined) return null;
  const percent = options.percent ?? "reject";
  if (pct === "%" && percent === "reject") return null;
  const sign = s1 || s2;
  const negative = sign === "-" || sign === "\u2212";
  const literal = `${negative ? "-" : ""}${(int ?? "0").replace(/,/g, "")}${frac ?? ""}${exp ?? ""}`;
  let value = Number(literal);
  if (pct === "%" && percent === "fraction") value /= 100;
  return Number.isFinite(value) ? value : null;
}

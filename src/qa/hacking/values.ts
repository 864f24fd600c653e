/**
 * Values an agent could plausibly have sent instead of the ones it sent: ids, addresses, file paths,
 * emails and amounts seen in an episode's observations, grouped by shape. A "neighbouring valid value"
 * of an argument is another value of the same shape that the episode showed, so a swapped argument
 * names a real charge, address or file rather than garbage the tool would just refuse.
 */

/** Ids, addresses, paths and emails: runs without spaces that contain a digit, a separator or an @. */
const TOKEN = /[A-Za-z0-9][A-Za-z0-9_.@/:-]*[A-Za-z0-9]/g;

/**
 * The shape of a value: letters before the first digit kept literally (so `ch_1` and `cus_1` differ),
 * then digit runs as 9, letter runs as a/A; pure digit strings keep their length (a card's last four).
 */
export function shapeOf(value: string): string {
  if (/^\d+$/.test(value)) return `#${value.length}`;
  const head = /^[A-Za-z]*[_-]?/.exec(value)?.[0] ?? "";
  const rest = value.slice(head.length).replace(/\d+/g, "9").replace(/[a-z]+/g, "a").replace(/[A-Z]+/g, "A");
  return head + rest;
}

/** Whether a string argument is an identifier-like value worth swapping (not free text, not a word). */
export function isIdLike(value: string): boolean {
  return value.length >= 3 && value.length <= 80 && !/\s/.test(value) && /[\d_./@:-]/.test(value) && !/^\d+$/.test(value);
}

/** Every id-like token of the texts, in order of first appearance. */
export function tokensOf(texts: readonly string[]): string[] {
  const seen = new Set<string>();
  for (const text of texts) for (const m of text.matchAll(TOKEN)) seen.add(m[0].replace(/[.:]+$/, ""));
  return [...seen];
}

/** Integers shown in the texts (amounts, quantities, cents), in order of first appearance. */
export function numbersOf(texts: readonly string[]): number[] {
  const seen = new Set<number>();
  for (const text of texts) {
    for (const m of text.matchAll(/(?<![\w.])\d{1,9}(?![\w])/g)) seen.add(Number(m[0]));
  }
  return [...seen];
}

/** Another value of the same shape as `value` among `tokens`, the next one after it in order, or null. */
export function neighbourString(value: string, tokens: readonly string[]): string | null {
  const shape = shapeOf(value);
  const same = tokens.filter((t) => t !== value && shapeOf(t) === shape);
  if (same.length === 0) return null;
  const at = tokens.indexOf(value);
  return same.find((t) => tokens.indexOf(t) > at) ?? (same[0] as string);
}

/** Another integer of the same number of digits among `numbers`, else value + 1: always a different amount. */
export function neighbourNumber(value: number, numbers: readonly number[]): number {
  if (!Number.isInteger(value)) return Math.round((value + 1) * 100) / 100;
  const digits = String(Math.abs(value)).length;
  const same = numbers.filter((n) => n !== value && String(n).length === digits);
  const at = numbers.indexOf(value);
  return same.find((n) => numbers.indexOf(n) > at) ?? same[0] ?? value + 1;
}

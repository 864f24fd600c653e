/** Text normalization for exact-answer checks, so formatting noise does not decide correctness. */

export interface StringNormalization {
  /** Remove leading and trailing whitespace. Default true. */
  trim?: boolean;
  /** Replace every run of whitespace with one space. Default false. */
  collapseWhitespace?: boolean;
  /** Compare lower-cased (locale-independent `toLowerCase`). Default false. */
  caseInsensitive?: boolean;
  /** Delete Unicode punctuation (category P: `.,;:!?'"()-` …). Symbols such as `$` or `+` are kept. Default false. */
  stripPunctuation?: boolean;
  /** Apply Unicode NFKC (full-width letters, ligatures, compatibility forms). Default false. */
  nfkc?: boolean;
}

/**
 * Normalizes a string. Fixed order: NFKC, lower-case, strip punctuation, collapse whitespace, trim —
 * NFKC first so compatibility forms are folded before case and punctuation are looked at, and trim last
 * so whitespace left behind by deleted punctuation does not count.
 */
export function normalizeString(text: string, options: StringNormalization = {}): string {
  let s = text;
  if (options.nfkc === true) s = s.normalize("NFKC");
  if (options.caseInsensitive === true) s = s.toLowerCase();
  if (options.stripPunctuation === true) s = s.replace(/\p{P}/gu, "");
  if (options.collapseWhitespace === true) s = s.replace(/\s+/gu, " ");
  if (options.trim !== false) s = s.trim();
  return s;
}

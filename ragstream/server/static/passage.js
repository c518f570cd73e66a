// Finding a cited passage in a text, ignoring case, whitespace and punctuation (a PDF's text layer splits lines,
// hyphenates words and drops bullets that the chunk's text has not): the viewer highlights what it covers.

const WORD_CHAR = /[\p{L}\p{N}]/u;
/** The shortest run of letters and digits that counts as found (shorter ones recur by chance). */
export const MIN_RUN = 12;

/** ``text``'s letters and digits, lower-cased, and for each the index in ``text`` it came from. */
export function folded(text) {
  let chars = "";
  const at = [];
  let index = 0;
  for (const char of text) {
    if (WORD_CHAR.test(char)) {
      const lower = char.toLowerCase();
      chars += lower;
      for (let unit = 0; unit < lower.length; unit += 1) at.push(index);
    }
    index += char.length;
  }
  return { chars, at };
}

function findNear(haystack, piece, from) {
  const after = haystack.indexOf(piece, from);
  return after >= 0 ? after : haystack.indexOf(piece);
}

/** The ranges [start, end) of ``haystack`` (folded) that ``needle`` (folded) covers: the whole needle when it is
 * there, else each run of at least ``MIN_RUN`` characters found in order (a part of a chunk on the next page, a
 * page header between its lines, are left out). */
export function coveredRanges(haystack, needle) {
  if (!haystack || !needle) return [];
  const whole = haystack.indexOf(needle);
  if (whole >= 0) return [[whole, whole + needle.length]];
  const ranges = [];
  let from = 0;
  let i = 0;
  while (i + MIN_RUN <= needle.length) {
    const at = findNear(haystack, needle.slice(i, i + MIN_RUN), from);
    if (at < 0) {
      i += 1;
      continue;
    }
    let length = MIN_RUN;
    while (i + length < needle.length && haystack[at + length] === needle[i + length]) length += 1;
    ranges.push([at, at + length]);
    from = at + length;
    i += length;
  }
  return ranges;
}

/** What of each of the ``pieces`` (a page's text items, in order) ``passage`` covers: a Map from a piece's index to
 * [start, end) in that piece (from its first to its last covered character), and how many letters and digits of
 * the passage were found. */
export function coveredPieces(pieces, passage) {
  let haystack = "";
  const owner = [];  // for each folded character: [piece index, index in that piece]
  pieces.forEach((piece, index) => {
    const { chars, at } = folded(piece);
    haystack += chars;
    for (const position of at) owner.push([index, position]);
  });
  const covered = new Map();
  let found = 0;
  for (const [start, end] of coveredRanges(haystack, folded(passage).chars)) {
    found += end - start;
    for (let k = start; k < end; k += 1) {
      const [index, position] = owner[k];
      const stop = position + String.fromCodePoint(pieces[index].codePointAt(position)).length;
      const [from, to] = covered.get(index) || [position, stop];
      covered.set(index, [Math.min(from, position), Math.max(to, stop)]);
    }
  }
  return { covered, found };
}

/** Where ``quote`` lies in ``text`` as [start, end) indices of ``text`` (from its first to its last covered
 * character), or null when no run of it is there. */
export function quoteSpan(text, quote) {
  const hay = folded(text);
  const ranges = coveredRanges(hay.chars, folded(quote).chars);
  if (!ranges.length) return null;
  const last = hay.at[ranges[ranges.length - 1][1] - 1];
  return [hay.at[ranges[0][0]], last + String.fromCodePoint(text.codePointAt(last)).length];
}

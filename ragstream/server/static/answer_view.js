// How an answer reads on the Chat and Pipeline pages: [n] markers linked to that answer's sources, each
// sentence marked with its support verdict (an unsupported one with a visible mark, a supported one shows the
// passage that supports it on hover or focus), the source list entries and the confidence badge.
import { documentHref, el } from "./api.js";

const FENCE = /(```[\s\S]*?(?:```|$))/;
const BULLET = /^([ \t]*)[-*] (?=\S)/gm;  // Markdown list items read as bullets
const INLINE = /(`[^`\n]+`|\*\*[^*\n]+\*\*|\[\d+\])/;
const SCORE_DIGITS = 2;
const PATH_PARTS = 3;
const VERDICT_LABEL = { supported: "Supported", unsupported: "Unsupported", uncertain: "Uncertain" };
const UNSUPPORTED_MARK = "⚠";

export const sourceId = (answerId, number) => `source-${answerId}-${number}`;

/** Inline pieces: `code`, **bold**, and [n] linked when n is a cited source of this answer. */
function inline(text, answerId, cited) {
  return text.split(INLINE).filter(Boolean).map((part) => {
    if (part.startsWith("`") && part.endsWith("`") && part.length > 2) return el("code", {}, part.slice(1, -1));
    if (part.startsWith("**") && part.endsWith("**") && part.length > 4) return el("strong", {}, part.slice(2, -2));
    const marker = /^\[(\d+)\]$/.exec(part);
    if (marker && cited.has(Number(marker[1]))) {
      const number = Number(marker[1]);
      return el("a", { class: "cite", href: `#${sourceId(answerId, number)}`, "data-answer": answerId,
        "data-number": number, "aria-label": `source ${number}` }, part);
    }
    return part;
  });
}

/** UTF-16 index of each code point of ``text`` (the server counts sentence offsets in code points). */
function unitIndex(text) {
  const index = [0];
  for (const char of text) index.push(index[index.length - 1] + char.length);
  return index;
}

/** What a sentence's mark says: its verdict and reason, and the passage that supports it. */
function supportTip(sentence) {
  const span = sentence.span;
  const label = VERDICT_LABEL[sentence.verdict] || sentence.verdict;
  const where = span ? ` by [${span.number}]` : "";
  if (span && sentence.verdict === "supported") {
    return [el("strong", {}, `${label}${where}`), el("q", { class: "support-span" }, span.text)];
  }
  return [el("strong", {}, label), ` ${sentence.reason}`];
}

/** One sentence of the answer wrapped with its verdict: a mark after an unsupported one, a tip on hover/focus. */
function sentenceNode(nodes, sentence, tipId) {
  const label = VERDICT_LABEL[sentence.verdict] || sentence.verdict;
  const title = sentence.verdict === "supported" && sentence.span
    ? `${label} by [${sentence.span.number}]: “${sentence.span.text}”` : `${label}: ${sentence.reason}`;
  const mark = sentence.verdict === "unsupported"
    ? [el("span", { class: "support-mark", "aria-hidden": "true" }, UNSUPPORTED_MARK)] : [];
  return el("span", {
    class: `sentence ${sentence.verdict}`, tabindex: "0", title, "data-verdict": sentence.verdict,
    "data-index": sentence.index, "aria-describedby": tipId,
  }, ...nodes, ...mark, el("span", { class: "support-tip", id: tipId, role: "tooltip" }, ...supportTip(sentence)));
}

/** Inline pieces of a prose part (starting at ``offset`` in the answer), sentences wrapped with their verdicts. */
function prose(part, offset, answerId, cited, sentences, units) {
  const nodes = [];
  let position = 0;
  for (const sentence of sentences) {
    const start = units[sentence.start] - offset;
    const end = units[sentence.end] - offset;
    if (end <= 0 || start >= part.length || start < position) continue;  // not in this part
    if (start > position) nodes.push(...inline(part.slice(position, start), answerId, cited));
    const body = inline(part.slice(Math.max(start, 0), Math.min(end, part.length)), answerId, cited);
    nodes.push(sentenceNode(body, sentence, `tip-${answerId}-${sentence.index}`));
    position = Math.min(end, part.length);
  }
  if (position < part.length) nodes.push(...inline(part.slice(position), answerId, cited));
  return nodes;
}

/** The answer as text nodes: fenced code blocks, inline code, bold, citation links and sentence verdicts (never HTML). */
export function renderAnswer(node, text, answerId, cited, verdicts = new Map()) {
  const nodes = [];
  const sentences = [...verdicts.values()].sort((a, b) => a.start - b.start);
  const units = sentences.length ? unitIndex(text) : [];
  let offset = 0;
  for (const part of text.split(FENCE)) {
    if (part.startsWith("```")) {
      const body = part.replace(/^```[^\n]*\n?/, "").replace(/```$/, "");
      nodes.push(el("pre", {}, el("code", {}, body)));
    } else if (part) {
      nodes.push(...prose(part.replace(BULLET, "$1• "), offset, answerId, cited, sentences, units));
    }
    offset += part.length;
  }
  node.replaceChildren(...nodes);
}

/** The last parts of a long path ("…/tutorial/cors.md"); the full path is the element's title. */
function shortPath(source) {
  const parts = source.split("/");
  return parts.length > PATH_PARTS + 1 ? `…/${parts.slice(-PATH_PARTS).join("/")}` : source;
}

export function sourceItem(answerId, citation) {
  const score = typeof citation.score === "number" ? citation.score.toFixed(SCORE_DIGITS) : null;
  const where = [citation.section ? `§ ${citation.section}` : null, citation.page ? `page ${citation.page}` : null,
    score === null ? null : el("span", { class: "score" }, `score ${score}`)].filter(Boolean);
  const separated = where.flatMap((part, index) => (index ? [" · ", part] : [part]));
  return el("li", {
    id: sourceId(answerId, citation.number), tabindex: "-1", "data-number": citation.number,
    "data-document": citation.title || citation.document_id, "data-section": citation.section || null,
    "data-page": citation.page ?? null, "data-score": score,
  }, el("span", { class: "n" }, `[${citation.number}]`),
  el("div", { class: "doc" }, el("a", {
    href: documentHref(citation.document_id, { chunkId: citation.chunk_id, page: citation.page, quote: citation.quote }),
    title: "Open the document at this passage",
  }, citation.title || citation.source || citation.document_id)),
  el("div", { class: "where" }, ...separated),
  el("div", { class: "path", title: citation.source || "" }, shortPath(citation.source || "")),
  ...((citation.collections || []).length
    ? [el("div", { class: "collections muted" }, `in ${citation.collections.join(", ")}`)] : []));
}

/** The confidence badge and its reason. */
export function confidenceBadge(confidence) {
  return [el("span", { class: `badge ${confidence.level}`, "data-level": confidence.level },
    `${confidence.level} confidence`), el("span", { class: "muted confidence-reason" }, confidence.reason)];
}

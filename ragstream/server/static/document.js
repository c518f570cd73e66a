// Document view: a PDF's cited page drawn from its original file (pdf.js) with the cited passage highlighted, and
// the document's chunks in order (PDFs grouped by page) with the cited chunk highlighted, the passage in it marked
// and scrolled to (the whole view of a document of another type, or of a PDF whose original file is gone).
// Address: document.html?id=DOC[&chunk=CHUNK_ID][&page=N][&quote=SENTENCE] or #chunk-N (chunk index) / #page-N.
// ``quote``: the passage sentence supporting the answer, highlighted instead of the whole chunk when found.
// Text selected in the document ("Ask about this") opens the Chat page with it attached to the next question.
import { api, describe, el, shortTime } from "./api.js";
import { quoteSpan } from "./passage.js";
import { drawPage, openPdf } from "./pdf_view.js";
import { askAboutSelection } from "./selection.js";

const PDF_MIME = "application/pdf";
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(window.location.search);

const chunkAnchor = (chunk) => `chunk-${chunk.metadata.chunk_index}`;

function meta(record, chunks) {
  const first = record.first_ingested_at || record.ingested_at;
  const rows = [["File", record.metadata.filename || record.source], ["Type", record.mime],
    ["Chunks", String(chunks.length)], ["Ingested", shortTime(first)], ["Updated", shortTime(record.ingested_at)]];
  return rows.flatMap(([name, value]) => [el("dt", {}, name), el("dd", {}, value)]);
}

/** Text nodes marked as the cited passage (a code block's text inside its <pre>). */
function marked(nodes) {
  return nodes.map((node) => {
    if (node instanceof Element && node.tagName === "PRE") {
      node.firstChild.replaceChildren(el("mark", { class: "passage" }, node.firstChild.textContent));
      return node;
    }
    return el("mark", { class: "passage" }, node);
  });
}

/** The cited chunk's text with the passage marked: the quoted sentence when it is there, else the whole chunk. */
function markedNodes(text, quote) {
  const [start, end] = (quote && quoteSpan(text, quote)) || [0, text.length];
  return [...textNodes(text.slice(0, start)), ...marked(textNodes(text.slice(start, end))), ...textNodes(text.slice(end))];
}

function chunkNode(chunk, cited) {
  const m = chunk.metadata;
  const where = [(m.header_path || m.section).replaceAll(" > ", " › "), m.page ? `page ${m.page}` : null]
    .filter(Boolean).join(" · ");
  return el("article", {
    id: chunkAnchor(chunk), class: cited ? "doc-chunk cited" : "doc-chunk", tabindex: "-1",
    "data-chunk-id": chunk.chunk_id, "data-index": m.chunk_index, "aria-current": cited ? "true" : null,
    "aria-label": `Chunk ${m.chunk_index + 1}${cited ? " (cited)" : ""}`,
  }, el("div", { class: "chunk-head muted" }, el("a", { href: `#${chunkAnchor(chunk)}`, class: "chunk-link" },
    `#${m.chunk_index + 1}`), where ? ` ${where}` : "", cited ? el("span", { class: "badge cited-badge" }, "cited") : ""),
  el("div", { class: "chunk-text" }, ...(cited ? markedNodes(chunk.text, params.get("quote")) : textNodes(chunk.text))));
}

/** Inline `code` spans of a piece of text as <code> (as text, never HTML). */
function inlineNodes(text) {
  return text.split(/(`[^`\n]+`)/).filter(Boolean)
    .map((piece) => (piece.length > 2 && piece.startsWith("`") && piece.endsWith("`") ? el("code", {}, piece.slice(1, -1)) : piece));
}

/** The chunk's text with its fenced code blocks as <pre> and inline code as <code> (never HTML). */
function textNodes(text) {
  return text.split(/(```[\s\S]*?(?:```|$))/).filter(Boolean).flatMap((part) => (part.startsWith("```")
    ? [el("pre", {}, el("code", {}, part.replace(/^```[^\n]*\n?/, "").replace(/```$/, "")))]
    : inlineNodes(part)));
}

/** The chunk the address points at: ?chunk=ID, #chunk-N, else the first chunk of ?page= / #page-N. */
function target(chunks) {
  const byId = params.get("chunk") && chunks.find((chunk) => chunk.chunk_id === params.get("chunk"));
  if (byId) return byId;
  const hash = /^#(chunk|page)-(\d+)$/.exec(window.location.hash);
  if (hash && hash[1] === "chunk") return chunks.find((chunk) => chunk.metadata.chunk_index === Number(hash[2]));
  const page = hash && hash[1] === "page" ? Number(hash[2]) : Number(params.get("page"));
  return page ? chunks.find((chunk) => chunk.metadata.page === page) : null;
}

function render(record, chunks) {
  document.title = `${record.title} · ragstream`;
  $("doc-title").textContent = record.title;
  $("doc-meta").replaceChildren(...meta(record, chunks));
  $("chunk-count").textContent = `(${chunks.length} chunk${chunks.length === 1 ? "" : "s"})`;
  const cited = target(chunks);
  const nodes = [];
  let page = null;
  for (const chunk of chunks) {
    if (chunk.metadata.page && chunk.metadata.page !== page) {
      page = chunk.metadata.page;
      nodes.push(el("h3", { id: `page-${page}`, class: "page-head" }, `Page ${page}`));
    }
    nodes.push(chunkNode(chunk, cited === chunk));
  }
  $("chunks").replaceChildren(...nodes);
  if (params.get("chunk") && !cited) {
    $("doc-status").textContent = "The cited passage is no longer in this document (it was updated); showing the whole text.";
  }
  return cited;
}

/** Scroll to the cited chunk's marked passage and focus the chunk. */
function showCitedText(cited) {
  if (!cited) return;
  const node = document.getElementById(chunkAnchor(cited));
  (node.querySelector("mark.passage") || node).scrollIntoView({ block: "center" });
  node.focus({ preventScroll: true });
}

/** What the viewer says under the page it shows. */
function pageNote(shown, citedPage, highlighted) {
  if (shown !== citedPage) return highlighted ? "The cited passage goes on here." : `The cited passage is on page ${citedPage}.`;
  return highlighted ? "The cited passage is highlighted." : "The cited passage is not in this page's text layer; it is marked in the text below.";
}

/** The PDF's original drawn at the cited page with the passage highlighted; the text view when it cannot be. */
async function showPdf(record, cited) {
  let opened;
  try {
    opened = await openPdf(record.document_id);
  } catch (error) {
    $("doc-status").textContent = `The original file cannot be shown (${describe(error)}); showing the text instead.`;
    showCitedText(cited);
    return;
  }
  const pages = opened.pdf.numPages;
  const citedPage = Math.min(pages, (cited && cited.metadata.page) || Number(params.get("page")) || 1);
  const passages = cited ? [params.get("quote"), cited.text] : [];
  let current = citedPage;
  $("viewer").hidden = false;
  $("download").href = opened.blob;
  $("download").download = record.metadata.filename || `${record.title}.pdf`;
  const show = async (number) => {
    current = Math.min(Math.max(1, number), pages);
    $("prev-page").disabled = $("next-page").disabled = true;
    $("page-number").textContent = `${current} of ${pages}`;
    const spans = await drawPage(opened, current, $("pdf-page"), passages, current === citedPage);
    $("viewer-status").textContent = cited ? pageNote(current, citedPage, spans.length > 0) : "";
    $("prev-page").disabled = current <= 1;
    $("next-page").disabled = current >= pages;
    return spans;
  };
  $("prev-page").addEventListener("click", () => show(current - 1));
  $("next-page").addEventListener("click", () => show(current + 1));
  try {
    const spans = await show(citedPage);
    (spans[0] || $("viewer")).scrollIntoView({ block: "center" });
    if (cited) document.getElementById(chunkAnchor(cited)).focus({ preventScroll: true });  // its text, for a reader
  } catch (error) {
    $("viewer").hidden = true;
    $("doc-status").textContent = `The PDF cannot be drawn (${describe(error)}); showing the text instead.`;
    showCitedText(cited);
  }
}

async function load() {
  const id = params.get("id");
  if (!id) {
    $("doc-status").textContent = "No document given: open one from the Documents page or a cited source.";
    return;
  }
  try {
    const detail = await api(`/api/documents/${encodeURIComponent(id)}?include_chunks=true`);
    const cited = render(detail.document, detail.chunks || []);
    if (detail.document.mime === PDF_MIME) await showPdf(detail.document, cited);
    else showCitedText(cited);
  } catch (error) {
    $("doc-status").textContent = describe(error);
    $("doc-status").classList.add("error");
  }
}

window.addEventListener("hashchange", () => {
  const node = document.getElementById(window.location.hash.slice(1));
  if (node) node.focus();
});
askAboutSelection("#chunks", (text) => {
  window.location.href = `index.html?${new URLSearchParams({ selected: text })}`;
});
load();

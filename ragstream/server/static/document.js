// Document view: a document's chunks in order (PDFs grouped by page), the cited chunk highlighted and
// scrolled to. Address: document.html?id=DOC[&chunk=CHUNK_ID][&page=N] or #chunk-N (chunk index) / #page-N.
// Text selected in the document ("Ask about this") opens the Chat page with it attached to the next question.
import { api, describe, el, shortTime } from "./api.js";
import { askAboutSelection } from "./selection.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(window.location.search);

const chunkAnchor = (chunk) => `chunk-${chunk.metadata.chunk_index}`;

function meta(record, chunks) {
  const first = record.first_ingested_at || record.ingested_at;
  const rows = [["File", record.metadata.filename || record.source], ["Type", record.mime],
    ["Chunks", String(chunks.length)], ["Ingested", shortTime(first)], ["Updated", shortTime(record.ingested_at)]];
  return rows.flatMap(([name, value]) => [el("dt", {}, name), el("dd", {}, value)]);
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
  el("div", { class: "chunk-text" }, ...textNodes(chunk.text)));
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
  if (cited) {
    const node = document.getElementById(chunkAnchor(cited));
    node.scrollIntoView({ block: "center" });
    node.focus({ preventScroll: true });
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
    render(detail.document, detail.chunks || []);
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

// The PDF viewer of the document page: pdf.js (vendor/pdfjs, loaded only for a PDF) draws one page on a canvas
// with its text layer over it; the text-layer spans the cited passage covers are highlighted.
import { apiBytes, el } from "./api.js";
import { MIN_RUN, coveredPieces } from "./passage.js";

const PDFJS = "./vendor/pdfjs/pdf.min.mjs";
const WORKER = new URL("./vendor/pdfjs/pdf.worker.min.mjs", import.meta.url).href;
const MAX_SCALE = 2;  // a small page is not blown up past twice its size
const SPILL_RUNS = 3;  // on a page other than the cited one, a passage must cover this many runs to be highlighted

/** The document's original PDF (GET /api/documents/{id}/file) opened with pdf.js; throws ApiError (e.g.
 * original_unavailable) when the server has no original to give. */
export async function openPdf(documentId) {
  const data = await apiBytes(`/api/documents/${encodeURIComponent(documentId)}/file`);
  const pdfjs = await import(PDFJS);
  pdfjs.GlobalWorkerOptions.workerSrc = WORKER;
  const blob = URL.createObjectURL(new Blob([data], { type: "application/pdf" }));
  const pdf = await pdfjs.getDocument({ data: new Uint8Array(data), isEvalSupported: false }).promise;
  return { pdfjs, pdf, blob };
}

/** Draw page ``number`` of ``opened`` into ``container`` (canvas + text layer) and highlight the spans the first
 * of ``passages`` found there covers (``cited``: this is the cited page, where any run counts). The highlighted
 * spans, in order. */
export async function drawPage(opened, number, container, passages, cited) {
  const { pdfjs, pdf } = opened;
  const page = await pdf.getPage(number);
  const unscaled = page.getViewport({ scale: 1 });
  const scale = Math.min(MAX_SCALE, container.parentElement.clientWidth / unscaled.width);
  const viewport = page.getViewport({ scale });
  const ratio = window.devicePixelRatio || 1;
  const canvas = el("canvas", { "aria-label": `Page ${number}`, role: "img" });
  canvas.width = Math.floor(viewport.width * ratio);
  canvas.height = Math.floor(viewport.height * ratio);
  canvas.style.width = `${Math.floor(viewport.width)}px`;
  canvas.style.height = `${Math.floor(viewport.height)}px`;
  const layer = el("div", { class: "textLayer" });
  container.style.setProperty("--scale-factor", String(scale));
  container.style.width = canvas.style.width;
  container.replaceChildren(canvas, layer);
  const transform = ratio === 1 ? null : [ratio, 0, 0, ratio, 0, 0];
  await page.render({ canvasContext: canvas.getContext("2d"), canvas, viewport, transform }).promise;
  const textLayer = new pdfjs.TextLayer({ textContentSource: await page.getTextContent(), container: layer, viewport });
  await textLayer.render();
  container.dataset.page = String(number);
  return highlight(textLayer.textDivs, textLayer.textContentItemsStr, passages, cited);
}

/** Mark what the first passage found covers: a text-layer span it covers whole, else the covered part of its text
 * in a span of its own. The marked spans, in order. */
function highlight(divs, texts, passages, cited) {
  for (const passage of passages.filter(Boolean)) {
    const { covered, found } = coveredPieces(texts, passage);
    if (!covered.size || (!cited && found < SPILL_RUNS * MIN_RUN)) continue;
    const marked = [];
    for (const [index, [start, end]] of [...covered].sort((a, b) => a[0] - b[0])) {
      const div = divs[index];
      if (!div) continue;
      const text = texts[index];
      if (start === 0 && end === text.length) {
        div.classList.add("passage");
        marked.push(div);
      } else {
        const part = el("span", { class: "passage part" }, text.slice(start, end));
        div.replaceChildren(text.slice(0, start), part, text.slice(end));
        marked.push(part);
      }
    }
    return marked;
  }
  return [];
}

// Pipeline page: the stage buttons (each enabled once its predecessor ran), Auto, prompt_ready,
// the follow-up rewrite, and each stage's ranked chunks (top entries, "show all") with readable scores.
// What the page knows of the stages (names, order, which write a view, which view each narrows, which
// carry scores or the reranker's details) comes from the stage registry: GET /api/pipeline/stages?detail=true.
// ?conversation=ID&turns=N&q=TEXT[&selected=TEXT] starts from the first N turns of a chat conversation.
// After Prompt_Builder, Answer (also the end of Auto) streams the answering model's reply to exactly the
// rendered prompt (POST /api/pipeline/{id}/answer), with citations and each sentence's support; it can run
// again. Text selected in the Super-Prompt or the answer ("Ask about this") fills the Selected text field.
import { api, describe, documentHref, el, streamEvents } from "./api.js";
import { confidenceBadge, renderAnswer, sourceItem } from "./answer_view.js";
import { feedbackBar } from "./feedback.js";
import { askAboutSelection } from "./selection.js";

const $ = (id) => document.getElementById(id);
const SCORE_DIGITS = 2;
const SHORT_ID = 8;
const DEFAULT_TOP = 20;
let stages = [];  // the stage registry's entries, in order
let byEntry = new Map();  // history entry -> stage
let current = null;
let busy = false;
let topEntries = DEFAULT_TOP;
let conversation = [];
let answerRuns = 0;
let answered = null;  // the SuperPrompt id the answer panel shows an answer of
const expanded = new Set();  // views shown in full

function setStatus(text, isError = false) {
  $("status").textContent = text;
  $("status").classList.toggle("error", isError);
}

/** The stages that write a view, in order. */
const viewStages = () => stages.filter((stage) => stage.view);

function renderButtons() {
  const run = current ? current.stages_run : -1;
  $("stages").replaceChildren(...stages.map(({ name }, index) => el("button", {
    type: "button", class: index < run ? "done" : index === run ? "" : "secondary",
    disabled: busy || index !== run, "data-stage": name, "data-state": index < run ? "done" : index === run ? "next" : "pending",
    "aria-label": `${index + 1}. ${name}${index < run ? " (done)" : ""}`, onclick: () => runStage(name),
  }, `${index + 1}. ${name}`)));
  $("auto").disabled = busy || !$("prompt").value.trim();
  $("answer-step").disabled = busy || !current || current.next_stage !== null;
  $("create").disabled = busy;
  $("progress").textContent = current ? `(${current.stages_run} of ${stages.length} ran)` : "";
}

const logistic = (x) => 1 / (1 + Math.exp(-x));

/** What a view's score is and how to show it: a scored view holds fused scores unless its stage writes
 * the reranker's details (sp.rerank), whose backend says what its scores are. */
function scoreKind(view, sp) {
  const stage = byEntry.get(view);
  const fused = { label: "fused score", help: "hybrid BM25 + dense score relative to the best hit (1.00 = best)",
    show: (x) => x.toFixed(SCORE_DIGITS) };
  if (!stage || !stage.scored) return null;
  if (!stage.writes.includes("rerank")) return fused;
  const rerank = sp.rerank || {};
  if (rerank.backend === "cross_encoder") {
    const weight = Number(rerank.weight || 0).toFixed(SCORE_DIGITS);
    return { label: "final score", show: fused.show,
      help: `${weight} × cross-encoder (scaled over the ${rerank.candidates_scored} scored chunks) + ` +
        `(1 − ${weight}) × fused score; chunks past them keep their retrieval order` };
  }
  if (rerank.backend === "bi_encoder") return { label: "cosine", help: "embedding cosine of the prompt and the chunk", show: fused.show };
  return { ...fused, help: "reranker off: the retrieval order and scores" };
}

/** Dropped chunks per decision, from the gate's typed decisions (sp.chunk_decisions). */
function droppedCounts(sp) {
  const counts = {};
  for (const decision of Object.values(sp.chunk_decisions || {})) {
    if (decision !== "keep") counts[decision] = (counts[decision] || 0) + 1;
  }
  return Object.entries(counts).sort(([a], [b]) => a.localeCompare(b));
}

function stageSummary(view, sp, ids) {
  const stage = byEntry.get(view);
  if (stage.writes.includes("chunk_decisions")) {
    const dropped = droppedCounts(sp);
    return `kept ${ids.length}` + (dropped.length ? ` · dropped ${dropped.map(([d, n]) => `${d} ${n}`).join(", ")}` : "");
  }
  return `${ids.length} chunk(s) · ${stage.summary}`;
}

function chunkRow(view, byId, id, index, kind, scores, parentRank, final) {
  const chunk = byId.get(id) || { metadata: {} };
  const meta = chunk.metadata;
  const section = meta.section && meta.section !== meta.title ? meta.section : null;
  const where = [meta.title, section, meta.page ? `page ${meta.page}` : null].filter(Boolean).join(" › ");
  const raw = scores[index];
  const scoreCell = kind && typeof raw === "number"
    ? el("td", { class: "view num", "data-view": view, "data-rank": index + 1, "data-score": raw.toFixed(6),
      title: `raw score ${raw}` }, kind.show(raw))
    : null;
  const rerank = kind && kind.label === "final score" ? current.superprompt.rerank : null;
  const cross = rerank ? rerank.cross_scores[id] : undefined;
  const rerankCells = rerank ? [
    el("td", { class: "view num cross", "data-cross": cross === undefined ? "" : cross.toFixed(6),
      title: cross === undefined ? "not scored: past the cross-encoder's candidates" : `raw cross-encoder score ${cross}` },
      cross === undefined ? "–" : logistic(cross).toFixed(SCORE_DIGITS)),
    el("td", { class: "view num fused" }, rerank.fused_scores[id] === undefined ? "–" : rerank.fused_scores[id].toFixed(SCORE_DIGITS)),
  ] : [];
  const before = parentRank.has(id) ? parentRank.get(id) + 1 : null;
  const moved = before === null ? "" : before === index + 1 ? "=" : before > index + 1 ? `↑ from #${before}` : `↓ from #${before}`;
  const document = meta.document_id && meta.document_id !== "conversation"
    ? el("a", { href: documentHref(meta.document_id, { chunkId: id, page: meta.page }) }, where) : where;
  return el("tr", { "data-chunk": id, class: final.has(id) ? "final" : null },
    el("td", { class: "rank", "data-view": view, "data-rank": index + 1 }, `#${index + 1}`),
    el("td", {}, el("code", { title: id }, id.slice(0, SHORT_ID))),
    el("td", { class: "where" }, document),
    ...(scoreCell ? [scoreCell] : []),
    ...rerankCells,
    ...(byEntry.get(view).view_parent ? [el("td", { class: "muted moved" }, moved)] : []),
    el("td", { class: final.has(id) ? "final" : "muted", "aria-label": final.has(id) ? "in the final selection" : null },
      final.has(id) ? "✓" : ""));
}

/** One section per view: its top entries (all when expanded), scores formatted and explained. */
function stageView(view, sp, final, byId) {
  const ids = sp.views_by_stage[view];
  const kind = scoreKind(view, sp);
  const scores = (sp.scores_by_stage || {})[view] || [];
  const stage = byEntry.get(view);
  const parent = stage.view_parent ? byEntry.get(stage.view_parent) : null;
  const parentIds = parent ? sp.views_by_stage[parent.entry] || [] : [];
  const parentRank = new Map(parentIds.map((id, index) => [id, index]));
  const all = expanded.has(view);
  const shown = all ? ids : ids.slice(0, topEntries);
  const tableId = `view-${view}`;
  const heads = ["rank", "chunk", "document › section", ...(kind ? [kind.label] : []),
    ...(kind && kind.label === "final score" ? ["cross-encoder relevance", "fused score"] : []),
    ...(parent ? [`rank in ${parent.name}`] : []), "final"];
  const table = el("table", { id: tableId, "data-view": view },
    el("caption", { class: "visually-hidden" }, `${stage.name}: ${shown.length} of ${ids.length} chunks`),
    el("thead", {}, el("tr", {}, ...heads.map((head) => el("th", {
      scope: "col", class: [kind?.label, "cross-encoder relevance", "fused score"].includes(head) ? "num" : null }, head)))),
    el("tbody", {}, ...shown.map((id, index) => chunkRow(view, byId, id, index, kind, scores, parentRank, final))));
  const toggle = ids.length > topEntries ? el("button", {
    type: "button", class: "secondary show-all", "aria-expanded": String(all), "aria-controls": tableId,
    "data-view": view, onclick: () => {
      if (all) expanded.delete(view); else expanded.add(view);
      renderViews(current.superprompt);
      const again = $("views").querySelector(`button.show-all[data-view="${view}"]`);
      if (again) again.focus();  // the keyboard stays on the control
    },
  }, all ? `Show top ${topEntries}` : `Show all ${ids.length}`) : null;
  return el("section", { class: "stage-view", "data-view": view, "aria-labelledby": `${tableId}-title` },
    el("h3", { id: `${tableId}-title` }, `${stage.name} `,
      el("span", { class: "muted" }, `(${view}) · ${stageSummary(view, sp, ids)}` +
        (ids.length > shown.length ? ` · showing top ${shown.length}` : "")),
      kind ? el("span", { class: "muted score-help" }, `· ${kind.label}: ${kind.help}`) : ""),
    el("div", { class: "table-wrap" }, table), ...(toggle ? [toggle] : []));
}

function renderViews(sp) {
  const views = viewStages().map((stage) => stage.entry).filter((view) => (sp.views_by_stage || {})[view]);
  $("no-views").hidden = views.length > 0;
  const final = new Set(sp.final_selection_ids || []);
  const byId = new Map(sp.base_context_chunks.map((chunk) => [chunk.chunk_id, chunk]));
  $("views").replaceChildren(...views.map((view) => stageView(view, sp, final, byId)));
}

/** How each stage ran; a stage that fell back says why. */
function renderReports(sp) {
  const reports = Object.entries(sp.stage_reports || {});
  $("reports").replaceChildren(...reports.map(([stage, report]) => el("li", {
    class: report.fallback ? "fallback" : "", "data-stage": stage, "data-mode": report.mode,
    "data-fallback": String(report.fallback),
  }, el("strong", {}, (byEntry.get(stage) || { name: stage }).name), ` ${report.mode}${report.model ? ` (${report.model})` : ""}`,
    report.fallback ? " — fell back: " : report.reason ? " — " : "", report.reason || "")));
  $("reports").hidden = reports.length === 0;
}

function render(state) {
  current = state;
  const sp = state.superprompt;
  if (answered !== state.id) clearAnswer();
  renderButtons();
  $("prompt-ready").textContent = sp.prompt_ready || "(empty: no stage has written it yet)";
  $("rewritten").hidden = !sp.rewritten_query;
  $("rewritten").textContent = sp.rewritten_query ? `Follow-up rewritten for the search: ${sp.rewritten_query}` : "";
  renderReports(sp);
  renderViews(sp);
  $("json").textContent = JSON.stringify(sp, null, 2);
}

async function call(label, request) {
  setStatus(`${label}…`);
  const refocus = $("stages").contains(document.activeElement) || document.activeElement === $("auto");
  busy = true;
  renderButtons();
  try {
    render(await request());
    setStatus(current.next_stage ? `${label}: done. Next: ${current.next_stage}` : `${label}: all ${stages.length} stages ran.`);
    return true;
  } catch (error) {
    setStatus(describe(error), true);
    return false;
  } finally {
    busy = false;
    renderButtons();
    if (refocus) ($("stages").querySelector("button:not([disabled])") || $("prompt-ready")).focus();
  }
}

/** The Selected text field's value, or "" when it holds only blanks. */
const selectedText = () => ($("selected-text").value.trim() ? $("selected-text").value : "");

const create = () => {
  expanded.clear();
  const selected = selectedText() ? { selected_text: selectedText() } : {};
  return api("/api/pipeline", { method: "POST", body: { text: $("prompt").value, conversation, ...selected } });
};

function runStage(name) {
  return call(name, () => api(`/api/pipeline/${current.id}/run`, { method: "POST", body: { stage: name } }));
}

/** Auto: the remaining stages of the current SuperPrompt, or all of a new one when none is pending; then Answer. */
async function auto() {
  const reuse = current && current.next_stage !== null && current.superprompt.user_text === $("prompt").value &&
    current.superprompt.selected_text === selectedText();
  const ran = await call("Auto", async () => {
    const target = reuse ? current : await create();
    return api(`/api/pipeline/${target.id}/auto`, { method: "POST", body: {} });
  });
  if (ran && current.next_stage === null) await answer(`Auto: all ${stages.length} stages ran, then Answer`);
}

function clearAnswer() {
  answered = null;
  $("answer").hidden = true;
  $("no-answer").hidden = false;
  $("answer-text").replaceChildren();
  $("answer-meta").replaceChildren();
  $("answer-sources").replaceChildren();
  $("answer-sources-title").hidden = true;
}

/** How the answer was written: by which model, or extractively and why. */
function answerMode(done) {
  const model = ((done.response.metadata || {}).model || "the LLM").split("/").pop();  // a local model: its file name
  const lines = [done.mode === "llm" ? `Answered by ${model}` : done.mode === "extractive"
    ? "Extractive answer (sentences quoted from the attachments)" : `Answer mode: ${done.mode}`];
  if (done.degraded_reason) lines.push(`Degraded: ${done.degraded_reason}`);
  if (done.incomplete) lines.push("Incomplete: the answer stopped early.");
  return lines.map((line, index) => el("span", { class: index ? "notice" : "muted answer-mode", role: index ? "note" : null }, line));
}

/** The Answer step: the answering model's reply to the built prompt, streamed with citations and support. */
async function answer(label = "Answer") {
  if (!current || current.next_stage !== null) return;
  const answerId = `p${++answerRuns}`;
  const cited = new Map();  // number -> citation
  const verdicts = new Map();  // sentence index -> its support verdict
  let written = "";
  clearAnswer();
  answered = current.id;
  $("answer").hidden = false;
  $("no-answer").hidden = true;
  $("answer").setAttribute("aria-busy", "true");
  busy = true;
  renderButtons();
  setStatus(`${label}: the answering model reads the Super-Prompt…`);
  try {
    await streamEvents(`/api/pipeline/${current.id}/answer`, {}, (type, data) => {
      if (type === "token") {
        written += data.token;
      } else if (type === "citation" && !cited.has(data.number)) {
        cited.set(data.number, data);
        const sorted = [...cited.values()].sort((a, b) => a.number - b.number);
        $("answer-sources").replaceChildren(...sorted.map((citation) => sourceItem(answerId, citation)));
        $("answer-sources-title").hidden = false;
      } else if (type === "support") {
        verdicts.set(data.index, data);
      } else if (type === "done") {
        verdicts.clear();
        for (const sentence of data.response.sentences || []) verdicts.set(sentence.index, sentence);
        $("answer").dataset.messageId = data.message_id;
        $("answer").dataset.mode = data.mode;
        $("answer-meta").replaceChildren(...confidenceBadge(data.response.confidence), ...answerMode(data),
          feedbackBar(data.message_id));
      } else if (type === "error") {
        throw new Error(`${data.message} (${data.code}, request ${data.request_id})`);
      }
      renderAnswer($("answer-text"), written, answerId, cited, verdicts);
    });
    setStatus(`${label}: done.`);
  } catch (error) {
    setStatus(describe(error), true);
  } finally {
    $("answer").removeAttribute("aria-busy");
    busy = false;
    renderButtons();
  }
}

$("prompt-form").addEventListener("submit", (event) => {
  event.preventDefault();
  if (!busy) call("New SuperPrompt", create);
});
$("prompt").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    $("prompt-form").requestSubmit();
  }
});
$("prompt").addEventListener("input", renderButtons);
$("auto").addEventListener("click", auto);
$("answer-step").addEventListener("click", () => answer());
askAboutSelection("#prompt-ready, #answer-text, #answer-sources", (text) => {
  $("selected-text").value = text;
  setStatus("The selected text goes with the next SuperPrompt (New SuperPrompt or Auto).");
  $("prompt").focus();
});

/** ?conversation=ID&turns=N&q=TEXT: the prompt of a chat turn with the N turns before it. */
async function fromConversation() {
  const params = new URLSearchParams(window.location.search);
  if (params.get("q")) $("prompt").value = params.get("q");
  if (params.get("selected")) $("selected-text").value = params.get("selected");
  const id = params.get("conversation");
  if (!id) return;
  const turns = await api(`/api/conversations/${encodeURIComponent(id)}`);
  const count = params.has("turns") ? Number(params.get("turns")) : turns.length;
  conversation = turns.slice(0, count).map((turn) => ({ user: turn.user, assistant: turn.assistant }));
  $("conversation-note").hidden = conversation.length === 0;
  $("conversation-note").textContent = `With ${conversation.length} earlier turn(s) of the conversation: ` +
    `a follow-up question is rewritten with them before retrieval.`;
}

api("/api/ui").then((settings) => { topEntries = settings.stage_top_entries; }).catch(() => {});
fromConversation().catch((error) => setStatus(describe(error), true));
api("/api/pipeline/stages?detail=true").then((registry) => {
  stages = registry;
  byEntry = new Map(stages.map((stage) => [stage.entry, stage]));
  const first = viewStages()[0];
  if (first) $("no-views").textContent = `The chunk views appear once ${first.name} has run.`;
  renderButtons();
  if (current) render(current);
}).catch((error) => setStatus(describe(error), true));

// Pipeline page: the eight stage buttons (each enabled once its predecessor ran), Auto, prompt_ready,
// and the chunk ids with their rank and score in every stage's view.
import { api, describe, el } from "./api.js";

const $ = (id) => document.getElementById(id);
const SCORE_DIGITS = 3;
const SHORT_ID = 8;
let stages = [];
let current = null;
let busy = false;

function setStatus(text, isError = false) {
  $("status").textContent = text;
  $("status").classList.toggle("error", isError);
}

function renderButtons() {
  const run = current ? current.stages_run : -1;
  $("stages").replaceChildren(...stages.map((name, index) => el("button", {
    type: "button", class: index < run ? "done" : index === run ? "" : "secondary",
    disabled: busy || index !== run, "data-stage": name, "data-state": index < run ? "done" : index === run ? "next" : "pending",
    "aria-label": `${index + 1}. ${name}${index < run ? " (done)" : ""}`, onclick: () => runStage(name),
  }, `${index + 1}. ${name}`)));
  $("auto").disabled = busy || !$("prompt").value.trim();
  $("create").disabled = busy;
  $("progress").textContent = current ? `(${current.stages_run} of ${stages.length} ran)` : "";
}

/** One row per chunk seen in any view: its rank and score per view, and whether it was finally selected. */
function renderViews(sp) {
  const views = Object.entries(sp.views_by_stage);
  $("no-views").hidden = views.length > 0;
  $("views").hidden = views.length === 0;
  if (!views.length) return $("views").replaceChildren();
  const chunks = Object.fromEntries(sp.base_context_chunks.map((chunk) => [chunk.chunk_id, chunk]));
  const final = new Set(sp.final_selection_ids || []);
  const order = [];
  for (const [, ids] of [...views].reverse()) for (const id of ids) if (!order.includes(id)) order.push(id);
  const positions = views.map(([view, ids]) => {
    const scores = (sp.scores_by_stage || {})[view] || [];
    const decisions = view === "a3" ? (sp.chunk_decisions || {}) : {};
    return { view, scores, decisions, rank: new Map(ids.map((id, index) => [id, index])) };
  });
  const rows = order.map((id) => {
    const meta = (chunks[id] || {}).metadata || {};
    const where = [meta.title, meta.section, meta.page ? `page ${meta.page}` : null].filter(Boolean).join(" › ");
    const cells = positions.map(({ view, scores, decisions, rank }) => {
      if (!rank.has(id)) {
        return el("td", { class: "dropped", "data-view": view }, decisions[id] && decisions[id] !== "keep" ? decisions[id] : "—");
      }
      const index = rank.get(id);
      const score = typeof scores[index] === "number" ? scores[index].toFixed(SCORE_DIGITS) : null;
      return el("td", { class: "view num", "data-view": view, "data-rank": index + 1, "data-score": score },
        el("span", { class: "rank" }, `#${index + 1}`), score ?? "");
    });
    return el("tr", { "data-chunk": id }, el("td", {}, el("code", { title: id }, id.slice(0, SHORT_ID))),
      el("td", { class: "muted" }, where), ...cells,
      el("td", { class: final.has(id) ? "final" : "muted" }, final.has(id) ? "✓" : ""));
  });
  const heads = positions.map(({ view, rank }) => el("th", { class: "num", scope: "col" }, `${view} (${rank.size})`));
  $("views").replaceChildren(
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "chunk"), el("th", { scope: "col" }, "document › section"),
      ...heads, el("th", { scope: "col" }, "final"))),
    el("tbody", {}, ...rows));
}

/** How each stage ran; a stage that fell back says why. */
function renderReports(sp) {
  const reports = Object.entries(sp.stage_reports || {});
  $("reports").replaceChildren(...reports.map(([stage, report]) => el("li", {
    class: report.fallback ? "fallback" : "", "data-stage": stage, "data-mode": report.mode,
    "data-fallback": String(report.fallback),
  }, el("strong", {}, stage), ` ${report.mode}${report.model ? ` (${report.model})` : ""}`,
    report.fallback ? " — fell back: " : report.reason ? " — " : "", report.reason || "")));
  $("reports").hidden = reports.length === 0;
}

function render(state) {
  current = state;
  const sp = state.superprompt;
  renderButtons();
  $("prompt-ready").textContent = sp.prompt_ready || "(empty: no stage has written it yet)";
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
  } catch (error) {
    setStatus(describe(error), true);
  } finally {
    busy = false;
    renderButtons();
    if (refocus) ($("stages").querySelector("button:not([disabled])") || $("prompt-ready")).focus();
  }
}

const create = () => api("/api/pipeline", { method: "POST", body: { text: $("prompt").value } });

function runStage(name) {
  return call(name, () => api(`/api/pipeline/${current.id}/run`, { method: "POST", body: { stage: name } }));
}

/** Auto: the remaining stages of the current SuperPrompt, or all of a new one when none is pending. */
function auto() {
  const reuse = current && current.next_stage !== null && current.superprompt.user_text === $("prompt").value;
  return call("Auto", async () => {
    const target = reuse ? current : await create();
    return api(`/api/pipeline/${target.id}/auto`, { method: "POST", body: {} });
  });
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

api("/api/pipeline/stages").then((names) => { stages = names; renderButtons(); })
  .catch((error) => setStatus(describe(error), true));

// Pipeline page: the eight stage buttons (each enabled once its predecessor ran), Auto, prompt_ready,
// and per stage the chunk ids with their scores.
import { api, describe, el } from "./api.js";

const $ = (id) => document.getElementById(id);
const VIEW_SCORES = { retrieval: "retrieval", reranked: "reranker" };  // view -> extras key holding its scores
const SCORE_DIGITS = 3;
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
    type: "button", class: index < run ? "done" : "secondary", disabled: busy || index !== run,
    "aria-pressed": index < run ? "true" : "false", onclick: () => runStage(name),
  }, `${index + 1}. ${name}`)));
  $("auto").disabled = busy || !current || current.next_stage === null;
  $("progress").textContent = current ? `(${current.stages_run} of ${stages.length} ran)` : "";
}

function viewTable(view, ids, sp) {
  const chunks = Object.fromEntries(sp.base_context_chunks.map((chunk) => [chunk.chunk_id, chunk]));
  const scores = (sp.extras[VIEW_SCORES[view]] || {}).scores || [];
  const rows = ids.map((id, index) => {
    const meta = (chunks[id] || {}).metadata || {};
    const score = typeof scores[index] === "number" ? scores[index].toFixed(SCORE_DIGITS) : "—";
    return el("tr", {}, el("td", {}, index + 1), el("td", {}, el("code", { title: id }, id.slice(0, 8))),
      el("td", {}, score), el("td", { class: "muted" }, [meta.title, meta.section].filter(Boolean).join(" › ")));
  });
  return el("div", {}, el("h3", {}, `${view} (${ids.length})`),
    el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "#"), el("th", {}, "chunk"), el("th", {}, "score"),
      el("th", {}, "where"))), el("tbody", {}, ...rows)));
}

function render(state) {
  current = state;
  const sp = state.superprompt;
  renderButtons();
  $("prompt-ready").textContent = sp.prompt_ready || "(empty until A0_PreProcessing runs)";
  $("views").replaceChildren(...Object.entries(sp.views_by_stage).map(([view, ids]) => viewTable(view, ids, sp)));
  $("json").textContent = JSON.stringify(sp, null, 2);
}

async function call(label, request) {
  setStatus(`${label}…`);
  const refocus = $("stages").contains(document.activeElement);
  busy = true;
  renderButtons();
  try {
    render(await request());
    setStatus(current.next_stage ? `${label}: done. Next: ${current.next_stage}` : `${label}: all stages ran.`);
  } catch (error) {
    setStatus(describe(error), true);
  } finally {
    busy = false;
    renderButtons();
    if (refocus) ($("stages").querySelector("button:not([disabled])") || $("prompt-ready")).focus();
  }
}

function runStage(name) {
  return call(name, () => api(`/api/pipeline/${current.id}/run`, { method: "POST", body: { stage: name } }));
}

$("prompt-form").addEventListener("submit", (event) => {
  event.preventDefault();
  call("New SuperPrompt", () => api("/api/pipeline", { method: "POST", body: { text: $("prompt").value } }));
});
$("auto").addEventListener("click", () => call("Auto", () => api(`/api/pipeline/${current.id}/auto`,
  { method: "POST", body: {} })));

api("/api/pipeline/stages").then((names) => { stages = names; renderButtons(); })
  .catch((error) => setStatus(describe(error), true));

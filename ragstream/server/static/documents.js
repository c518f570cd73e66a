// Documents page: upload with progress (large uploads: the background job's progress), list, delete, reindex.
import { api, describe, el, uploadFiles } from "./api.js";

const $ = (id) => document.getElementById(id);
const PERCENT = 100;
const JOB_POLL_MS = 1000;
const JOB_ENDED = new Set(["succeeded", "failed"]);

function setStatus(node, text, isError = false) {
  node.textContent = text;
  node.classList.toggle("error", isError);
}

function resultRow(item) {
  const detail = item.error ? `${item.error.code}: ${item.error.message}`
    : item.status === "duplicate" ? `same content as ${item.duplicate_of.join(", ")}` : item.stored_as || "";
  return el("tr", { "data-status": item.status }, el("td", {}, item.filename),
    el("td", {}, el("span", { class: `badge ${item.status}` }, item.status)),
    el("td", { class: "num" }, item.chunks ?? ""), el("td", { class: item.error ? "error" : "muted" }, detail));
}

function showProgress(fraction) {
  const percent = Math.round(fraction * PERCENT);
  $("upload-progress").value = fraction;
  $("upload-percent").textContent = `${percent}%`;
  setStatus($("upload-status"), fraction < 1 ? `Uploading… ${percent}%` : "Uploaded; indexing…");
}

function showResults(files) {
  const table = $("upload-results");
  table.tBodies[0].replaceChildren(...files.map(resultRow));
  table.hidden = false;
}

/** Poll a background ingest job (202 answer), showing files done of total and chunks, until it ends. */
async function followJob(job) {
  setStatus($("upload-status"), `Indexing in the background (job ${job.id})…`);
  for (;;) {
    const fraction = job.files_total ? job.files_done / job.files_total : 1;
    $("upload-progress").value = fraction;
    $("upload-percent").textContent = `${job.files_done}/${job.files_total}`;
    $("upload-progress").setAttribute("aria-label", "Indexing progress");
    showResults(job.files);
    if (JOB_ENDED.has(job.state)) return job;
    setStatus($("upload-status"), `Indexing in the background: ${job.files_done} of ${job.files_total} file(s), ` +
      `${job.chunks} chunks (${job.state})`);
    await new Promise((resolve) => setTimeout(resolve, JOB_POLL_MS));
    job = await api(`/api/jobs/${encodeURIComponent(job.id)}`);
    if (job.files_done) await refresh();
  }
}

async function upload(event) {
  event.preventDefault();
  const files = [...$("files").files];
  if (!files.length) return;
  $("upload-progress-row").hidden = false;
  showProgress(0);
  $("upload-button").disabled = true;
  setStatus($("upload-status"), `Uploading ${files.length} file(s)…`);
  try {
    const { status, body: answer } = await uploadFiles(files, showProgress);
    const body = status === 202 ? await followJob(answer) : answer;
    showResults(body.files);
    const failed = body.files.filter((item) => item.status === "failed").length;
    const jobFailed = body.state === "failed" ? ` (job failed: ${body.error.message})` : "";
    setStatus($("upload-status"), `${body.files.length - failed} of ${body.files.length} file(s) landed` +
      (failed ? `, ${failed} failed` : "") + jobFailed, failed === body.files.length || Boolean(jobFailed));
    $("upload-form").reset();
    await refresh();
  } catch (error) {
    setStatus($("upload-status"), describe(error), true);
  } finally {
    $("upload-button").disabled = false;
    $("upload-progress-row").hidden = true;
    $("upload-progress").setAttribute("aria-label", "Upload progress");
  }
}

function documentRow(doc) {
  const remove = el("button", { class: "danger", type: "button", "aria-label": `Delete ${doc.title}` }, "Delete");
  remove.addEventListener("click", () => removeDocument(doc));
  return el("tr", { "data-id": doc.document_id },
    el("td", {}, doc.title), el("td", { class: "muted" }, doc.metadata.filename || doc.source),
    el("td", { class: "muted" }, doc.mime), el("td", { class: "num" }, doc.chunk_count),
    el("td", { class: "muted" }, doc.ingested_at.replace("T", " ").replace("+00:00", " UTC")), el("td", {}, remove));
}

async function refresh() {
  try {
    const docs = await api("/api/documents");
    $("documents").tBodies[0].replaceChildren(...docs.map(documentRow));
    setStatus($("list-status"), docs.length ? `${docs.length} document(s)` : "No documents yet: upload some above.");
    return docs;
  } catch (error) {
    setStatus($("list-status"), describe(error), true);
    return null;
  }
}

async function removeDocument(doc) {
  if (!window.confirm(`Delete “${doc.title}” and its chunks?`)) return;
  const rows = [...$("documents").tBodies[0].rows];
  const index = rows.findIndex((row) => row.dataset.id === doc.document_id);
  try {
    await api(`/api/documents/${encodeURIComponent(doc.document_id)}`, { method: "DELETE" });
    await refresh();
    setStatus($("list-status"), `Deleted ${doc.title}`);
  } catch (error) {
    setStatus($("list-status"), describe(error), true);
  }
  // Keep the keyboard focus in the list: the row that took its place, or the Refresh button.
  const buttons = $("documents").querySelectorAll("button.danger");
  (buttons[Math.min(index, buttons.length - 1)] || $("refresh")).focus();
}

async function reindex() {
  $("reindex").disabled = true;
  setStatus($("list-status"), "Reindexing…");
  try {
    const report = await api("/api/documents/reindex", { method: "POST" });
    await refresh();
    setStatus($("list-status"), `Reindexed ${report.documents_processed} document(s), ${report.chunks_written} chunks` +
      (report.documents_failed ? `, ${report.documents_failed} failed` : ""), report.documents_failed > 0);
  } catch (error) {
    setStatus($("list-status"), describe(error), true);
  } finally {
    $("reindex").disabled = false;
  }
}

$("upload-form").addEventListener("submit", upload);
$("refresh").addEventListener("click", refresh);
$("reindex").addEventListener("click", reindex);
refresh();

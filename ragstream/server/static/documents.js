// Documents page: upload with progress (large uploads: the background job's progress); the synced and
// watched folders with their last sync (refreshed while the page is open); the list paged, filtered and
// sorted by the server (refreshed when a folder's sync changed documents); delete, reindex.
import { api, describe, documentHref, el, readableCollections, shortTime, uploadFiles } from "./api.js";

const $ = (id) => document.getElementById(id);
const PERCENT = 100;
const FILTER_DELAY_MS = 250;
const DEFAULT_PAGE_SIZE = 25;
const JOB_POLL_MS = 1000;
const JOB_ENDED = new Set(["succeeded", "failed"]);
const ROOTS_POLL_MS = 5000;
const SYNC_COUNTS = ["added", "changed", "renamed", "removed", "failed"];
let lastSyncs = null;
/** The folder whose "Sync now" the user clicked, until its sync is seen done: { root, before: its last_sync_at then }. */
let pendingSync = null;
const list = { offset: 0, limit: DEFAULT_PAGE_SIZE, q: "", sort: "title", order: "asc", total: 0, collection: "" };
let filterTimer = null;

function setStatus(node, text, isError = false) {
  node.textContent = text;
  node.classList.toggle("error", isError);
}

function resultRow(item) {
  const warnings = (item.warnings || []).join("; ");
  const detail = item.error ? `${item.error.code}: ${item.error.message}`
    : item.status === "duplicate" ? `same content as ${item.duplicate_of.join(", ")}` : warnings || item.stored_as || "";
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
    const { status, body: answer } = await uploadFiles(files, showProgress, list.collection);
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

/** The last part of a path or URL: the name a person knows the file by (the full source is its title). */
const fileName = (source) => source.split(/[\\/]/).filter(Boolean).pop() || source;

let collections = [];  // GET /api/collections: what the caller may read, each with the name that names it (ref)

/** The collections the caller may read: the filter, the editor's list and each row's "Move to". */
async function loadCollections() {
  try {
    collections = await readableCollections();
  } catch (error) {
    setStatus($("collection-status"), describe(error), true);
    return;
  }
  const options = () => collections.map((c) => el("option", { value: c.ref, title: c.description || "" },
    `${c.ref} (${c.documents})`));
  $("collection").replaceChildren(el("option", { value: "" }, "All collections"), ...options());
  $("collection").value = list.collection;
  $("collection-pick").replaceChildren(el("option", { value: "" }, "New collection"), ...options());
}

const users = (text) => text.split(",").map((user) => user.trim()).filter(Boolean);

function pickCollection() {
  const picked = collections.find((c) => c.ref === $("collection-pick").value);
  $("collection-name").value = picked ? picked.name : "";
  $("collection-description").value = picked ? picked.description : "";
  $("collection-instructions").value = picked ? picked.instructions : "";
  $("collection-access").value = picked ? picked.access : "private";
  $("collection-readers").value = picked ? picked.readers.join(", ") : "";
  $("collection-editors").value = picked ? picked.editors.join(", ") : "";
}

/** Create the collection (POST /api/collections) or change the one picked (PATCH, its owner or an admin). */
async function saveCollection(event) {
  event.preventDefault();
  const editing = $("collection-pick").value;
  const body = { name: $("collection-name").value.trim(), description: $("collection-description").value,
    instructions: $("collection-instructions").value, access: $("collection-access").value,
    readers: users($("collection-readers").value), editors: users($("collection-editors").value) };
  try {
    const saved = await api(editing ? `/api/collections/${encodeURIComponent(editing)}` : "/api/collections",
      { method: editing ? "PATCH" : "POST", body });
    await loadCollections();
    const ref = (collections.find((c) => c.collection_id === saved.collection_id) || saved).ref || saved.qualified_name;
    if (editing && list.collection === editing) list.collection = ref;  // the collection shown was renamed
    $("collection").value = list.collection;
    $("collection-pick").value = ref;
    setStatus($("collection-status"), `${editing ? "Saved" : "Created"} ${saved.name}`);
    await refresh();  // each row's "Move to" lists the new or renamed collection
  } catch (error) {
    setStatus($("collection-status"), describe(error), true);
  }
}

/** Put a document in another collection; with a collection shown, take it out of that one (a move). */
async function moveDocument(doc, target) {
  const from = list.collection;
  try {
    await api(`/api/collections/${encodeURIComponent(target)}/documents/${encodeURIComponent(doc.document_id)}`,
      { method: "PUT" });
    if (from && from !== target) {
      await api(`/api/collections/${encodeURIComponent(from)}/documents/${encodeURIComponent(doc.document_id)}`,
        { method: "DELETE" });
    }
    await loadCollections();
    await refresh();  // then say what moved: the refreshed list's own count would overwrite it
    setStatus($("list-status"), `${doc.title}: ${from && from !== target ? "moved" : "added"} to ${target}`);
  } catch (error) {
    setStatus($("list-status"), describe(error), true);
  }
}

function moveSelect(doc) {
  const select = el("select", { "aria-label": `Put ${doc.title} in a collection` },
    el("option", { value: "" }, list.collection ? "Move to…" : "Add to…"),
    ...collections.map((c) => el("option", { value: c.ref }, c.ref)));
  select.addEventListener("change", () => select.value && moveDocument(doc, select.value));
  return select;
}

function documentRow(doc) {
  const remove = el("button", { class: "danger", type: "button", "aria-label": `Delete ${doc.title}` }, "Delete");
  remove.addEventListener("click", () => removeDocument(doc));
  const first = doc.first_ingested_at || doc.ingested_at;
  return el("tr", { "data-id": doc.document_id },
    el("td", {}, el("a", { class: "title", href: documentHref(doc.document_id), title: doc.title }, doc.title)),
    el("td", { class: "muted file", title: doc.source }, doc.metadata.filename || fileName(doc.source)),
    el("td", { class: "muted" }, doc.mime), el("td", { class: "num" }, doc.chunk_count),
    el("td", { class: "muted date", title: first }, shortTime(first)),
    el("td", { class: "muted date", title: doc.ingested_at }, shortTime(doc.ingested_at)),
    el("td", {}, moveSelect(doc), " ", remove));
}

function renderSortHeaders() {
  for (const th of $("documents").tHead.querySelectorAll("th[data-sort]")) {
    const active = th.dataset.sort === list.sort;
    th.setAttribute("aria-sort", active ? (list.order === "asc" ? "ascending" : "descending") : "none");
    th.querySelector("button").dataset.direction = active ? list.order : "";
  }
}

function renderPager(shown) {
  const first = shown ? list.offset + 1 : 0;
  $("page-info").textContent = list.total ? `${first}–${list.offset + shown} of ${list.total}` : "";
  $("prev-page").disabled = list.offset === 0;
  $("next-page").disabled = list.offset + shown >= list.total;
}

/** Load the current page (filter, sort, offset) from GET /api/documents/page. */
async function refresh() {
  const params = new URLSearchParams({ offset: list.offset, limit: list.limit, q: list.q, sort: list.sort, order: list.order });
  if (list.collection) params.append("collection", list.collection);
  try {
    const page = await api(`/api/documents/page?${params}`);
    if (page.items.length === 0 && page.total > 0 && list.offset > 0) {  // the last page emptied: step back
      list.offset = Math.max(0, Math.floor((page.total - 1) / list.limit) * list.limit);
      return refresh();
    }
    list.total = page.total;
    $("documents").tBodies[0].replaceChildren(...page.items.map(documentRow));
    renderSortHeaders();
    renderPager(page.items.length);
    const status = page.total ? `${page.total} document(s)${list.q ? ` matching “${list.q}”` : ""}`
      : list.q ? `No document matches “${list.q}”.` : "No documents yet: upload some above.";
    setStatus($("list-status"), status);
    return page.items;
  } catch (error) {
    setStatus($("list-status"), describe(error), true);
    return null;
  }
}

function sortBy(key) {
  list.order = list.sort === key && list.order === "asc" ? "desc" : "asc";
  list.sort = key;
  list.offset = 0;
  return refresh();
}

function onFilter() {
  clearTimeout(filterTimer);
  filterTimer = setTimeout(() => {
    list.q = $("filter").value.trim();
    list.offset = 0;
    refresh();
  }, FILTER_DELAY_MS);
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

/** "2 added, 1 removed" from a root's last sync counts ("no change" when nothing moved, "" before any sync). */
function syncSummary(last) {
  const parts = SYNC_COUNTS.filter((key) => last[key]).map((key) => `${last[key]} ${key}`);
  return parts.length ? parts.join(", ") : last.unchanged !== undefined ? "no change" : "";
}

/** The last-sync cell, with its first failures as a title. */
function syncResult(last) {
  const failures = (last.failures || []).map((item) => `${item.source}: ${item.code}: ${item.message}`).join("\n");
  return el("td", { class: last.failed ? "error" : "muted", title: failures || null }, syncSummary(last));
}

/** The roots status line: the folder the user asked to sync (syncing, then its result), else the counts. */
function rootsStatus(roots) {
  const pending = pendingSync && roots.find((root) => root.root === pendingSync.root);
  if (pending && (pending.syncing || pending.last_sync_at === pendingSync.before)) return `Syncing ${pending.root}…`;
  pendingSync = null;
  if (pending) return `Synced ${pending.root}: ${syncSummary(pending.last_sync || {}) || "done"}`;
  const watching = roots.filter((root) => root.watching).length;
  return roots.length
    ? `${roots.length} folder(s), ${watching} watched`
    : "No synced folders yet: run ragstream sync PATH or ragstream watch PATH on the server's machine.";
}

function rootRow(root) {
  const state = root.syncing ? "syncing" : root.watching ? "watching" : "synced";
  const sync = el("button", { class: "secondary", type: "button", "aria-label": `Sync ${root.root} now` }, "Sync now");
  sync.addEventListener("click", () => syncRoot(root, sync));
  return el("tr", { "data-root": root.root },
    el("td", { class: "file", title: root.root }, root.root),
    el("td", {}, el("span", { class: `badge ${state}` }, state)),
    el("td", { class: "num" }, root.documents),
    el("td", { class: "muted date", title: root.last_sync_at || "" }, shortTime(root.last_sync_at)),
    syncResult(root.last_sync || {}), el("td", {}, sync));
}

/** Load GET /api/roots; when a folder's sync ran since the last look, reload the document list too. */
async function refreshRoots() {
  try {
    const { roots } = await api("/api/roots");
    $("roots").tBodies[0].replaceChildren(...roots.map(rootRow));
    $("roots").hidden = roots.length === 0;
    const syncs = roots.map((root) => `${root.root}@${root.last_sync_at}`).join("|");
    if (lastSyncs !== null && syncs !== lastSyncs) await refresh();
    lastSyncs = syncs;
    setStatus($("roots-status"), rootsStatus(roots));
  } catch (error) {
    setStatus($("roots-status"), describe(error), true);
  }
}

async function syncRoot(root, button) {
  button.disabled = true;
  try {
    const answer = await api("/api/roots/sync", { method: "POST", body: { root: root.root } });
    if (!answer.queued) {
      setStatus($("roots-status"), `A sync of ${root.root} is already queued`);
      return;
    }
    pendingSync = { root: root.root, before: root.last_sync_at };
    setStatus($("roots-status"), `Syncing ${root.root}…`);
    await refreshRoots();
  } catch (error) {
    setStatus($("roots-status"), describe(error), true);
  } finally {
    button.disabled = false;
  }
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
$("refresh").addEventListener("click", () => refresh());
$("refresh-roots").addEventListener("click", () => refreshRoots());
$("reindex").addEventListener("click", reindex);
$("filter").addEventListener("input", onFilter);
$("collection").addEventListener("change", () => { list.collection = $("collection").value; list.offset = 0; refresh(); });
$("collection-pick").addEventListener("change", pickCollection);
$("collection-form").addEventListener("submit", saveCollection);
const collectionsLoaded = loadCollections();
$("filter-form").addEventListener("submit", (event) => event.preventDefault());
$("prev-page").addEventListener("click", () => { list.offset = Math.max(0, list.offset - list.limit); refresh(); });
$("next-page").addEventListener("click", () => { list.offset += list.limit; refresh(); });
for (const th of $("documents").tHead.querySelectorAll("th[data-sort]")) {
  th.querySelector("button").addEventListener("click", () => sortBy(th.dataset.sort));
}
api("/api/ui").then((settings) => { list.limit = settings.documents_page_size; })
  .catch(() => {}).finally(() => collectionsLoaded.then(() => refresh()));
refreshRoots();
setInterval(() => { if (!document.hidden) refreshRoots(); }, ROOTS_POLL_MS);

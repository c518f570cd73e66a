// Chat page: streams POST /api/chat, renders [n] markers as links to the sources panel (per answer),
// marks each sentence with its support verdict (an unsupported one with a visible mark, a supported one
// shows the passage that supports it on hover or focus), and shows each answer's confidence badge.
import { api, describe, documentHref, el, streamEvents } from "./api.js";
import { citationOpened, feedbackBar } from "./feedback.js";

const $ = (id) => document.getElementById(id);
const FENCE = /(```[\s\S]*?(?:```|$))/;
const BULLET = /^([ \t]*)[-*] (?=\S)/gm;  // Markdown list items read as bullets
const INLINE = /(`[^`\n]+`|\*\*[^*\n]+\*\*|\[\d+\])/;
const SCORE_DIGITS = 2;
const FLASH_MS = 1600;
const PATH_PARTS = 3;
const answers = new Map();  // answer id -> Map(number -> citation data)
const messageIds = new Map();  // answer id -> the message id its done event carried (to rate it)
const VERDICT_LABEL = { supported: "Supported", unsupported: "Unsupported", uncertain: "Uncertain" };
const UNSUPPORTED_MARK = "⚠";
let conversationId = null;
let controller = null;
let shownAnswer = null;
let answerCount = 0;
let turnsInConversation = 0;

const sourceId = (answerId, number) => `source-${answerId}-${number}`;

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
function renderAnswer(node, text, answerId, cited, verdicts = new Map()) {
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

function sourceItem(answerId, citation) {
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
    href: documentHref(citation.document_id, { chunkId: citation.chunk_id, page: citation.page }),
    title: "Open the document at this passage",
  }, citation.title || citation.source || citation.document_id)),
  el("div", { class: "where" }, ...separated),
  el("div", { class: "path", title: citation.source || "" }, shortPath(citation.source || "")),
  ...((citation.collections || []).length
    ? [el("div", { class: "collections muted" }, `in ${citation.collections.join(", ")}`)] : []));
}

/** Show the sources of ``answerId`` in the panel. */
function showSources(answerId) {
  shownAnswer = answerId;
  const citations = [...(answers.get(answerId) || new Map()).values()].sort((a, b) => a.number - b.number);
  $("sources").replaceChildren(...citations.map((citation) => sourceItem(answerId, citation)));
  $("no-sources").hidden = citations.length > 0;
}

function addSource(answerId, citation) {
  const cited = answers.get(answerId);
  if (cited.has(citation.number)) return;
  cited.set(citation.number, citation);
  if (shownAnswer === answerId) showSources(answerId);
}

function setBusy(busy) {
  $("send").disabled = busy;
  $("stop").disabled = !busy;
}

function setStatus(text, isError = false) {
  $("chat-status").textContent = text;
  $("chat-status").classList.toggle("error", isError);
}

/** What the reader must know about how the answer was made: degraded, incomplete, stage fallbacks. */
function notices(done) {
  const fallbacks = Object.entries(((done.response.metadata || {}).pipeline || {}).fallbacks || {});
  const lines = [];
  if (done.degraded_reason) lines.push(`Degraded: ${done.degraded_reason}`);
  if (done.incomplete) lines.push("Incomplete: the answer stopped early.");
  for (const [stage, reason] of fallbacks) lines.push(`Stage ${stage} fell back: ${reason}`);
  return lines.map((line) => el("span", { class: "notice", role: "note" }, line));
}

function confidenceBadge(confidence) {
  return [el("span", { class: `badge ${confidence.level}`, "data-level": confidence.level },
    `${confidence.level} confidence`), el("span", { class: "muted confidence-reason" }, confidence.reason)];
}

async function ask(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question || controller) return;
  const answerId = String(++answerCount);
  const cited = new Map();
  const verdicts = new Map();  // sentence index -> its support verdict
  answers.set(answerId, cited);
  const text = el("div", { class: "text" });
  const meta = el("div", { class: "meta" });
  const answer = el("article", { class: "message assistant", "data-answer": answerId, "aria-busy": "true" }, text, meta);
  $("messages").append(el("div", { class: "message user" }, el("div", { class: "text" }, question)), answer);
  $("empty-state").hidden = true;
  $("question").value = "";
  showSources(answerId);
  setStatus("Retrieving and thinking…");
  let written = "";
  controller = new AbortController();
  setBusy(true);
  try {
    const scope = $("collection").value ? { collections: [$("collection").value] } : {};
    await streamEvents("/api/chat", { message: question, conversation_id: conversationId, ...scope }, (type, data) => {
      if (type === "token") {
        written += data.token;
        setStatus("Answering…");
      } else if (type === "citation") {
        addSource(answerId, data);
      } else if (type === "support") {
        verdicts.set(data.index, data);
      } else if (type === "queued") {  // waiting in line for the answering model
        const why = data.reason === "rate_limited" ? "the model is rate-limited" : "many questions at once";
        setStatus(`${why[0].toUpperCase()}${why.slice(1)}: waiting ${Math.round(data.waited_seconds)} s ` +
          `(place ${data.position} in line)…`);
      } else if (type === "done") {
        verdicts.clear();
        for (const sentence of data.response.sentences || []) verdicts.set(sentence.index, sentence);
        conversationId = data.conversation_id;
        answer.dataset.messageId = data.message_id;
        messageIds.set(answerId, data.message_id);
        meta.replaceChildren(...confidenceBadge(data.response.confidence), ...notices(data));
        const params = new URLSearchParams({ conversation: data.conversation_id, turns: turnsInConversation++, q: question });
        meta.append(el("a", { class: "pipeline-link", href: `pipeline.html?${params}` }, "How it was retrieved"));
        const rewritten = ((data.response.metadata || {}).pipeline || {}).rewritten_query;
        if (rewritten) answer.insertBefore(el("p", { class: "rewritten" }, `Follow-up searched as: ${rewritten}`), meta);
        answer.append(feedbackBar(data.message_id));
        setStatus("");
      } else if (type === "error") {
        throw new Error(`${data.message} (${data.code}, request ${data.request_id})`);
      }
      renderAnswer(text, written, answerId, cited, verdicts);
    }, controller.signal);
  } catch (error) {
    if (error.name === "AbortError") {
      answer.classList.add("incomplete");
      setStatus("Stopped.");
    } else {
      setStatus(describe(error), true);
    }
  } finally {
    answer.removeAttribute("aria-busy");
    controller = null;
    setBusy(false);
    $("question").focus();
  }
}

function stop() {
  if (controller) controller.abort();
}

$("ask-form").addEventListener("submit", ask);
$("question").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $("ask-form").requestSubmit();
  }
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && controller) stop();
});
$("stop").addEventListener("click", stop);
$("new-chat").addEventListener("click", () => {
  stop();
  conversationId = null;
  turnsInConversation = 0;
  answers.clear();
  messageIds.clear();
  $("messages").replaceChildren();
  $("empty-state").hidden = false;
  showSources(null);
  setStatus("");
  $("question").focus();
});
// A source's document link opened counts as a citation opened.
$("sources").addEventListener("click", (event) => {
  if (event.target.closest("a") && shownAnswer) citationOpened(messageIds.get(shownAnswer));
});
// A citation link shows that answer's sources and moves the focus to the cited entry.
$("messages").addEventListener("click", (event) => {
  const link = event.target.closest("a.cite");
  if (!link) return;
  event.preventDefault();
  citationOpened(messageIds.get(link.dataset.answer));
  if (shownAnswer !== link.dataset.answer) showSources(link.dataset.answer);
  const item = document.getElementById(sourceId(link.dataset.answer, link.dataset.number));
  if (!item) return;
  item.scrollIntoView({ block: "nearest" });
  item.focus();
  item.classList.add("flash");
  setTimeout(() => item.classList.remove("flash"), FLASH_MS);
});

/** Placeholder and example questions from the user's own index (GET /api/ui). */
function showExamples(settings) {
  if (!settings.documents) {
    $("empty-state").replaceChildren("No documents are indexed yet: upload some on the ",
      el("a", { href: "documents.html" }, "Documents page"), " first.");
    $("question").placeholder = "Upload documents first, then ask about them.";
    return;
  }
  const examples = settings.example_questions;
  if (!examples.length) return;
  $("question").placeholder = `For example: ${examples[0]}`;
  $("empty-state").append(el("div", { class: "examples", role: "group", "aria-label": "Example questions" },
    el("span", { class: "muted" }, "Try:"),
    ...examples.map((question) => el("button", { type: "button", class: "secondary example", onclick: () => {
      $("question").value = question;
      $("ask-form").requestSubmit();
    } }, question))));
}

api("/api/ui").then(showExamples).catch(() => {});
/** The collection picker: every collection the caller may read (GET /api/collections); "All collections" reads them all. */
api("/api/collections").then((collections) => {
  $("collection").append(...collections.map((c) => el("option", { value: c.name, title: c.description || "" },
    `${c.name} (${c.documents})`)));
}).catch(() => {});
$("question").focus();

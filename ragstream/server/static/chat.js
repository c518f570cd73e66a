// Chat page: streams POST /api/chat, renders [n] markers as links to the sources panel (per answer),
// marks each sentence with its support verdict (an unsupported one with a visible mark, a supported one
// shows the passage that supports it on hover or focus), and shows each answer's confidence badge. Text
// selected in an answer or a source ("Ask about this", or ?selected=TEXT from the document page) goes with
// the next question as selected_text, shown above the question until it is sent or removed.
import { api, describe, el, readableCollections, streamEvents } from "./api.js";
import { confidenceBadge, renderAnswer, sourceId, sourceItem } from "./answer_view.js";
import { citationOpened, feedbackBar } from "./feedback.js";
import { askAboutSelection } from "./selection.js";

const $ = (id) => document.getElementById(id);
const FLASH_MS = 1600;
const answers = new Map();  // answer id -> Map(number -> citation data)
const messageIds = new Map();  // answer id -> the message id its done event carried (to rate it)
let conversationId = null;
let controller = null;
let shownAnswer = null;
let answerCount = 0;
let turnsInConversation = 0;
let selectedText = "";  // attached to the next question
let maxSelected = Infinity;  // answer.max_selected_text_chars, from GET /api/ui

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

/** Each source of ``answerId`` carries the first passage sentence that supports the answer (its link opens the
 * document with that sentence highlighted). */
function quoteSources(answerId, sentences) {
  const cited = answers.get(answerId);
  for (const { verdict, span } of sentences) {
    const citation = span && verdict === "supported" && cited.get(span.number);
    if (citation && !citation.quote && citation.chunk_id === span.chunk_id) citation.quote = span.text;
  }
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

/** Attach ``text`` to the next question (empty: remove what is attached). */
function attach(text) {
  if (text.length > maxSelected) {
    setStatus(`The selection is ${text.length} characters; at most ${maxSelected} can go with a question.`, true);
    return;
  }
  selectedText = text;
  $("attached-text").textContent = text;
  $("attached-text").title = text;
  $("attached").hidden = !text;
  setStatus(text ? "The selected text goes with your next question." : "");
  $("question").focus();
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
  const selected = selectedText;
  const quoted = selected ? [el("blockquote", { class: "selected-text", title: "The selected text this question is about" }, selected)] : [];
  $("messages").append(el("div", { class: "message user" }, ...quoted, el("div", { class: "text" }, question)), answer);
  $("empty-state").hidden = true;
  $("question").value = "";
  if (selected) attach("");
  showSources(answerId);
  setStatus("Retrieving and thinking…");
  let written = "";
  controller = new AbortController();
  setBusy(true);
  try {
    const scope = $("collection").value ? { collections: [$("collection").value] } : {};
    await streamEvents("/api/chat", { message: question, conversation_id: conversationId, ...(selected ? { selected_text: selected } : {}), ...scope }, (type, data) => {
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
        quoteSources(answerId, data.response.sentences || []);
        conversationId = data.conversation_id;
        answer.dataset.messageId = data.message_id;
        messageIds.set(answerId, data.message_id);
        meta.replaceChildren(...confidenceBadge(data.response.confidence), ...notices(data));
        const params = new URLSearchParams({ conversation: data.conversation_id, turns: turnsInConversation++, q: question,
          ...(selected ? { selected } : {}) });
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
  const link = event.target.closest("a");
  if (link && shownAnswer) citationOpened(messageIds.get(shownAnswer), link.closest("li")?.dataset.number);
});
// A citation link shows that answer's sources and moves the focus to the cited entry.
$("messages").addEventListener("click", (event) => {
  const link = event.target.closest("a.cite");
  if (!link) return;
  event.preventDefault();
  citationOpened(messageIds.get(link.dataset.answer), link.dataset.number);
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

api("/api/ui").then((settings) => {
  maxSelected = settings.max_selected_text_chars;
  showExamples(settings);
}).catch(() => {});
$("detach").addEventListener("click", () => attach(""));
askAboutSelection("#messages .message.assistant .text, #sources", attach);
const preset = new URLSearchParams(window.location.search).get("selected");  // "Ask about this" on a document
if (preset) attach(preset);
/** The collection picker: every collection the caller may read (GET /api/collections); "All collections" reads them all. */
readableCollections().then((collections) => {
  $("collection").append(...collections.map((c) => el("option", { value: c.ref, title: c.description || "" },
    `${c.ref} (${c.documents})`)));
}).catch(() => {});
$("question").focus();

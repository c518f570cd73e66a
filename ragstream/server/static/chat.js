// Chat page: streams POST /api/chat, links [n] markers to the sources panel, shows the confidence badge.
import { describe, el, streamEvents } from "./api.js";

const $ = (id) => document.getElementById(id);
const MARKER = /\[(\d+)\]/g;
let conversationId = null;
let controller = null;

function sourceId(number) {
  return `source-${number}`;
}

/** The answer text with every [n] of a known source turned into a link to it. */
function renderAnswer(node, text, cited) {
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(MARKER)) {
    parts.push(text.slice(last, match.index));
    const number = Number(match[1]);
    parts.push(cited.has(number)
      ? el("a", { class: "cite", href: `#${sourceId(number)}`, "aria-label": `source ${number}` }, match[0])
      : match[0]);
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  node.replaceChildren(...parts);
}

function addSource(citation) {
  if (document.getElementById(sourceId(citation.number))) return;
  const where = [citation.section, citation.page ? `page ${citation.page}` : ""].filter(Boolean).join(" · ");
  const score = typeof citation.score === "number" ? `score ${citation.score.toFixed(2)}` : "";
  const item = el("li", { id: sourceId(citation.number), value: citation.number, tabindex: "-1" },
    el("strong", {}, citation.title || citation.source || citation.document_id),
    el("div", { class: "muted" }, [where, score].filter(Boolean).join(" · ")),
    el("div", { class: "muted" }, citation.source || ""));
  const list = $("sources");
  const after = [...list.children].find((child) => Number(child.value) > citation.number);
  list.insertBefore(item, after || null);
  $("no-sources").hidden = true;
}

function setBusy(busy) {
  $("send").disabled = busy;
  $("stop").disabled = !busy;
}

async function ask(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question || controller) return;
  $("messages").append(el("div", { class: "message user" }, question));
  const answer = el("div", { class: "message assistant" });
  $("messages").append(answer);
  $("question").value = "";
  $("confidence").replaceChildren();
  $("sources").replaceChildren();
  $("no-sources").hidden = false;
  $("chat-status").textContent = "Retrieving and thinking…";
  $("chat-status").classList.remove("error");
  let text = "";
  const cited = new Set();
  controller = new AbortController();
  setBusy(true);
  try {
    await streamEvents("/api/chat", { message: question, conversation_id: conversationId }, (type, data) => {
      if (type === "token") {
        text += data.token;
        $("chat-status").textContent = "Answering…";
      } else if (type === "citation") {
        cited.add(data.number);
        addSource(data);
      } else if (type === "done") {
        conversationId = data.conversation_id;
        const confidence = data.response.confidence;
        $("confidence").replaceChildren(el("span", { class: `badge ${confidence.level}`, title: confidence.reason },
          `${confidence.level} confidence`), " ", el("span", { class: "muted" }, confidence.reason));
        $("chat-status").textContent = "";
      } else if (type === "error") {
        throw new Error(`${data.message} (${data.code}, request ${data.request_id})`);
      }
      renderAnswer(answer, text, cited);
    }, controller.signal);
  } catch (error) {
    if (error.name === "AbortError") {
      answer.classList.add("incomplete");
      $("chat-status").textContent = "Stopped.";
    } else {
      $("chat-status").textContent = describe(error);
      $("chat-status").classList.add("error");
    }
  } finally {
    controller = null;
    setBusy(false);
    $("question").focus();
  }
}

$("ask-form").addEventListener("submit", ask);
$("question").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $("ask-form").requestSubmit();
  }
});
$("stop").addEventListener("click", () => controller && controller.abort());
$("new-chat").addEventListener("click", () => {
  conversationId = null;
  $("messages").replaceChildren();
  $("sources").replaceChildren();
  $("confidence").replaceChildren();
  $("no-sources").hidden = false;
  $("question").focus();
});
$("sources").addEventListener("focusin", (event) => event.target.classList.add("flash"));

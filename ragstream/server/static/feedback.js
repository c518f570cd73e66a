// Feedback on an answer (Chat page): "Helpful" / "Not helpful" buttons and an optional comment, sent to
// POST /api/feedback with the answer's message id; citation opens are counted with
// POST /api/feedback/citation-open (each citation of an answer counts once). A later rating of the same answer
// replaces the earlier one.
import { api, describe, el } from "./api.js";

const LABELS = { helpful: "Helpful", not_helpful: "Not helpful" };

/** The feedback bar of the answer whose `done` event carried `messageId`. */
export function feedbackBar(messageId) {
  const status = el("span", { class: "feedback-status muted", role: "status" });
  const comment = el("input", { type: "text", class: "feedback-comment", maxlength: "2000", hidden: true,
    placeholder: "What was wrong or missing? (optional)", "aria-label": "Comment on this answer" });
  const send = el("button", { type: "button", class: "feedback-send", hidden: true }, "Send comment");
  let chosen = null;
  const buttons = Object.entries(LABELS).map(([rating, label]) => el("button", {
    type: "button", class: `feedback-rate ${rating}`, "data-rating": rating, "aria-pressed": "false",
    onclick: () => rate(rating),
  }, label));

  async function rate(rating, text = "") {
    try {
      await api("/api/feedback", { method: "POST", body: { message_id: messageId, rating, comment: text } });
      chosen = rating;
      for (const button of buttons) button.setAttribute("aria-pressed", String(button.dataset.rating === rating));
      comment.hidden = send.hidden = false;
      status.textContent = text ? "Thanks: comment sent." : `Thanks: rated ${LABELS[rating].toLowerCase()}.`;
    } catch (error) {
      status.textContent = `Feedback not sent: ${describe(error)}`;
    }
  }

  send.addEventListener("click", () => {
    if (chosen && comment.value.trim()) rate(chosen, comment.value.trim());
  });
  return el("div", { class: "feedback", "data-message-id": messageId, role: "group", "aria-label": "Rate this answer" },
    el("span", { class: "muted" }, "Was this helpful?"), ...buttons, comment, send, status);
}

/** Count the citation [`number`] of the answer `messageId` opened, once however often (best effort: a failure
 * is not shown). */
export function citationOpened(messageId, number) {
  if (!messageId) return;
  const citation = Number.parseInt(number, 10);
  const body = Number.isInteger(citation) ? { message_id: messageId, citation } : { message_id: messageId };
  api("/api/feedback/citation-open", { method: "POST", body }).catch(() => {});
}

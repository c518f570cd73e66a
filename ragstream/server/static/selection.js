// "Ask about this": text selected inside the given parts of a page (an answer, a source, a document's text)
// shows a small button by the selection; the button hands the selected text to the page (the Chat page
// attaches it to the next question as selected_text, the Pipeline page puts it in its Selected text field).
import { el } from "./api.js";

const GAP_PX = 6;
const NOT_TEXT = ".support-tip, .support-mark";  // an answer's hover tips and marks are not what was selected

/** The selection's text without the tips and marks inside it. */
function selectedText(selection) {
  const copy = el("div");
  for (let i = 0; i < selection.rangeCount; i += 1) copy.append(selection.getRangeAt(i).cloneContents());
  if (!copy.querySelector(NOT_TEXT)) return selection.toString().trim();
  copy.querySelectorAll(NOT_TEXT).forEach((node) => node.remove());
  return copy.textContent.replace(/[ \t]+/g, " ").trim();
}

const within = (node, selector) => Boolean(node && (node instanceof Element ? node : node.parentElement)?.closest(selector));

/** Show "Ask about this" for text selected inside ``selector``; ``onAsk(text)`` when it is clicked. */
export function askAboutSelection(selector, onAsk) {
  const button = el("button", { type: "button", class: "ask-about", hidden: true,
    title: "Ask a question about the selected text" }, "Ask about this");
  let text = "";
  const hide = () => {
    button.hidden = true;
    text = "";
  };
  function update() {
    const selection = window.getSelection();
    const chosen = selection && !selection.isCollapsed ? selectedText(selection) : "";
    if (!chosen || !within(selection.anchorNode, selector) || !within(selection.focusNode, selector)) {
      if (document.activeElement !== button) hide();
      return;
    }
    text = chosen;
    const box = selection.getRangeAt(selection.rangeCount - 1).getBoundingClientRect();
    button.style.left = `${Math.max(0, window.scrollX + box.left)}px`;
    button.style.top = `${window.scrollY + box.bottom + GAP_PX}px`;
    button.hidden = false;
  }
  button.addEventListener("mousedown", (event) => event.preventDefault());  // keep the selection
  button.addEventListener("click", () => {
    const chosen = text;
    hide();
    window.getSelection().removeAllRanges();
    if (chosen) onAsk(chosen);
  });
  document.addEventListener("selectionchange", update);
  document.body.append(button);
  return button;
}

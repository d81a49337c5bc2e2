/* Concord annotation item page: around autosave (htmx does the saving), focused time, keyboard
 * shortcuts, the exclusive "No errors", and capturing review quotes for the blind
 * recommendation.
 *
 * Untrusted text (reviews, item names) is only ever read from the DOM and written back with
 * textContent or into form values; nothing here builds HTML from strings. */
(function () {
  "use strict";

  const form = document.getElementById("annotation-form");
  if (!form) return;
  const draftUrl = form.getAttribute("hx-post");
  const focusedInput = form.querySelector("input[name=focused_ms]");
  let submitting = false;

  function setStatus(text, state) {
    const statusEl = document.getElementById("save-status");  // htmx swaps it after a save
    if (!statusEl) return;
    statusEl.textContent = text;
    statusEl.className = "save-status state-" + state;
  }

  // --- focused time: counted only while the page is visible and has the focus ------------
  let focusedMs = parseInt(focusedInput.value || "0", 10) || 0;
  const isFocused = () => document.visibilityState === "visible" && document.hasFocus();
  let activeSince = isFocused() ? performance.now() : null;

  function settleTime() {
    const now = performance.now();
    if (activeSince !== null) focusedMs += Math.min(now - activeSince, 60000);
    activeSince = isFocused() ? now : null;
    focusedInput.value = String(Math.round(focusedMs));
  }
  window.addEventListener("focus", settleTime);
  window.addEventListener("blur", settleTime);
  document.addEventListener("visibilitychange", settleTime);
  setInterval(settleTime, 1000);

  // --- autosave -----------------------------------------------------------------------------
  // The save itself is htmx (hx-post, hx-trigger and hx-target on the form, in item.html);
  // here: what the draft carries (the focused time), what the page says meanwhile, a retry
  // after a failure, and no save once the form is being submitted.
  let dirty = false;  // changed since the last successful save
  let savedFocusMs = focusedMs;

  // Typing saves 700 ms after the last key (item.html's "autosave-typed delay:700ms"); the
  // filter is here, not in hx-trigger, whose [filters] htmx would evaluate as code (the page's
  // Content-Security-Policy forbids that: htmx runs with allowEval off, base.html).
  const TYPED = "textarea, input[type=text], input[type=number], input[type=range]";
  form.addEventListener("input", (event) => {
    if (event.target.matches(TYPED)) htmx.trigger(form, "autosave-typed");
  });

  form.addEventListener("htmx:configRequest", (event) => {
    settleTime();
    event.detail.parameters["focused_ms"] = focusedInput.value;
  });
  form.addEventListener("htmx:beforeRequest", (event) => {
    if (submitting) { event.preventDefault(); return; }
    dirty = false;
    setStatus("Saving…", "saving");
  });
  // base.html's responseHandling swaps 503 answers in site-wide (the "queue unavailable"
  // fragment); a failed draft save must not replace the status line, or the retry message
  // below has nowhere to go. htmx fires beforeSwap on the *target* (#save-status, outside
  // the form), so the listener sits on the document and picks out this form's requests (a
  // listener on the form never hears it).
  document.addEventListener("htmx:beforeSwap", (event) => {
    const detail = event.detail;
    if (detail.elt !== form && detail.requestConfig?.elt !== form) return;
    if (detail.xhr.status < 200 || detail.xhr.status > 299) {
      detail.shouldSwap = false;
      detail.isError = true;
    }
  });
  form.addEventListener("htmx:afterRequest", (event) => {
    if (event.detail.successful) {
      savedFocusMs = focusedMs;
    } else if (!submitting) {
      dirty = true;
      setStatus("Not saved yet, retrying…", "error");
      htmx.trigger(form, "autosave-retry");
    }
  });

  // Leaving or hiding the page: send what is unsaved (and the focused time) in a beacon.
  function beacon() {
    if (submitting || !navigator.sendBeacon) return;
    settleTime();
    if (!dirty && focusedMs - savedFocusMs < 2000) return;
    if (navigator.sendBeacon(draftUrl, new FormData(form))) {
      dirty = false;
      savedFocusMs = focusedMs;
    }
  }

  // A change made by script (a captured quote) fires no event of its own: save it now.
  function saveNow() {
    dirty = true;
    htmx.trigger(form, "autosave-now");
  }

  form.addEventListener("change", () => { dirty = true; });
  form.addEventListener("input", () => { dirty = true; });
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "hidden") beacon();
  });
  window.addEventListener("pagehide", beacon);

  form.addEventListener("submit", (event) => {
    if (submitting) { event.preventDefault(); return; }  // a double click sends one request
    settleTime();
    submitting = true;
    const button = document.getElementById("submit-button");
    if (button) setTimeout(() => { button.disabled = true; }, 0);
  });

  // --- the error checklist: "No errors" is exclusive ----------------------------------------
  const checklist = Array.from(form.querySelectorAll("input[name=error]"));
  const noErrors = checklist.find((box) => box.value === "no_errors");
  checklist.forEach((box) => box.addEventListener("change", () => {
    if (!box.checked) return;
    if (box === noErrors) {
      checklist.forEach((other) => { if (other !== box) other.checked = false; });
    } else if (noErrors) {
      noErrors.checked = false;
    }
  }));

  // --- CoRE overall: the slider and the number box mirror each other ------------------------
  form.querySelectorAll("input[data-mirror]").forEach((slider) => {
    const box = document.getElementById(slider.dataset.mirror);
    slider.addEventListener("input", () => { box.value = slider.value; });
    box.addEventListener("input", () => { if (box.value !== "") slider.value = box.value; });
  });

  // --- keyboard -----------------------------------------------------------------------------
  const rows = Array.from(form.querySelectorAll("[data-row]"));
  let active = -1;

  function setActive(index, scroll) {
    if (!rows.length) return;
    active = Math.max(0, Math.min(index, rows.length - 1));
    rows.forEach((row, i) => row.classList.toggle("is-active", i === active));
    if (scroll) rows[active].scrollIntoView({ block: "nearest" });
  }
  rows.forEach((row, i) => row.addEventListener("click", () => setActive(i, false)));
  rows.forEach((row, i) => row.addEventListener("focusin", () => setActive(i, false)));
  setActive(0, false);

  const isTyping = (el) => el && el.matches &&
    el.matches("textarea, input[type=text], input[type=number], select, [contenteditable]");

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.altKey || event.metaKey) return;
    const target = event.target;
    if (event.key === "Enter") {
      if (target.matches && target.matches("button, a, summary")) return;
      if (target.matches && target.matches(".review-text") && !event.ctrlKey) {
        // Enter in a review adds the selected passage as a quote (keyboard quoting);
        // Ctrl+Enter submits, as everywhere
        event.preventDefault();
        const add = target.closest(".review-block").querySelector(".add-quote");
        if (add) add.click();
        return;
      }
      if (isTyping(target) && !event.ctrlKey) {
        // Enter in a one-line box (flag reason, a number) must not submit the whole item;
        // in a text area it starts a new line. Ctrl+Enter submits from anywhere.
        if (target.tagName !== "TEXTAREA") event.preventDefault();
        return;
      }
      event.preventDefault();
      form.requestSubmit();
      return;
    }
    if (isTyping(target) || event.ctrlKey) return;
    const key = event.key.toLowerCase();
    if (/^[0-9]$/.test(key) && active >= 0) {
      const input = rows[active].querySelector(`input[data-key="${key}"]`);
      if (input) {
        event.preventDefault();
        input.click();
        setActive(active + 1, true);
      }
    } else if (key === "j") {
      event.preventDefault();
      setActive(active + 1, true);
    } else if (key === "k") {
      event.preventDefault();
      setActive(active - 1, true);
    } else if (/^[a-z]$/.test(key)) {
      const box = checklist.find((b) => b.dataset.key === key);
      if (box) {
        event.preventDefault();
        box.click();
      }
    }
  });

  // --- blind recommendation: picks and quotes -----------------------------------------------
  const quotesInput = document.getElementById("rec-quotes");
  if (!quotesInput) return;
  const textBox = document.getElementById("rec-text");
  const maxItems = 3;
  let quotes = [];
  try { quotes = JSON.parse(quotesInput.value || "[]"); } catch (e) { quotes = []; }
  const picks = Array.from(form.querySelectorAll("input[name=rec-item]"));

  function renderPicks() {
    const picked = picks.filter((p) => p.checked);
    document.getElementById("rec-count").textContent = String(picked.length);
    picks.forEach((p) => {
      p.disabled = !p.checked && picked.length >= maxItems;
      p.closest(".candidate").classList.toggle("is-picked", p.checked);
    });
    const list = document.getElementById("rec-picked");
    list.replaceChildren(...picked.map((p) => {
      const li = document.createElement("li");
      li.textContent = p.closest(".candidate").dataset.itemName;
      return li;
    }));
  }

  function renderQuotes() {
    quotesInput.value = JSON.stringify(quotes);
    document.getElementById("rec-quote-count").textContent = String(quotes.length);
    const list = document.getElementById("rec-quote-list");
    list.replaceChildren(...quotes.map((quote, index) => {
      const li = document.createElement("li");
      const q = document.createElement("q");
      q.textContent = quote.text;
      const where = document.createElement("span");
      where.className = "muted";
      where.textContent = " review " + quote.review_id + " ";
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "linkish remove-quote";
      remove.textContent = "remove";
      remove.addEventListener("click", () => {
        quotes.splice(index, 1);
        renderQuotes();
        saveNow();
      });
      li.append(q, where, remove);
      return li;
    }));
  }

  function flash(button, message) {
    const old = button.textContent;
    button.textContent = message;
    button.classList.add("is-warning");
    setTimeout(() => { button.textContent = old; button.classList.remove("is-warning"); }, 1800);
  }

  function selectionIn(paragraph) {
    const selection = window.getSelection();
    if (!selection || selection.rangeCount === 0 || selection.isCollapsed) return null;
    const range = selection.getRangeAt(0);
    if (!paragraph.contains(range.startContainer) || !paragraph.contains(range.endContainer)) {
      return null;
    }
    const before = document.createRange();
    before.selectNodeContents(paragraph);
    before.setEnd(range.startContainer, range.startOffset);
    const full = paragraph.textContent;
    let start = before.toString().length;
    let end = start + range.toString().length;
    while (start < end && /\s/.test(full[start])) start += 1;
    while (end > start && /\s/.test(full[end - 1])) end -= 1;
    return end > start ? { start, end, text: full.slice(start, end) } : null;
  }

  // Review text takes keyboard focus and a caret, so a keyboard user selects a passage with
  // Shift and the arrow keys (then Enter or "+ Add quote"); it stays read-only: every edit is
  // refused before it happens.
  form.querySelectorAll(".review-text").forEach((paragraph) => {
    paragraph.contentEditable = "true";
    paragraph.spellcheck = false;
    paragraph.tabIndex = 0;
    paragraph.setAttribute("role", "textbox");
    paragraph.setAttribute("aria-readonly", "true");
    paragraph.setAttribute("aria-multiline", "true");
    paragraph.setAttribute("aria-label", "Review " + paragraph.dataset.reviewId +
      ": select a passage with Shift and the arrow keys, then press Enter to quote it");
    ["beforeinput", "paste", "drop", "cut"].forEach((type) =>
      paragraph.addEventListener(type, (event) => event.preventDefault()));
  });

  form.querySelectorAll(".add-quote").forEach((button) => button.addEventListener("click", () => {
    const block = button.closest(".review-block");
    const paragraph = block.querySelector(".review-text");
    const span = selectionIn(paragraph);
    if (!span) { flash(button, "Select text in this review first"); return; }
    if (quotes.some((q) => q.review_id === paragraph.dataset.reviewId &&
                           q.start === span.start && q.end === span.end)) {
      flash(button, "You already quoted this passage");
      return;
    }
    const card = button.closest(".candidate");
    const pick = card.querySelector("input[name=rec-item]");
    if (!pick.checked) {
      if (picks.filter((p) => p.checked).length >= maxItems) {
        flash(button, "You already picked " + maxItems + " places");
        return;
      }
      pick.checked = true;
    }
    quotes.push({ item_id: card.dataset.itemId, review_id: paragraph.dataset.reviewId,
                  start: span.start, end: span.end, text: span.text });
    block.classList.add("is-cited");
    const sentence = "I recommend " + card.dataset.itemName + " because \"" + span.text + "\".";
    textBox.value = textBox.value.trim() ? textBox.value.trimEnd() + " " + sentence : sentence;
    window.getSelection().removeAllRanges();
    renderPicks();
    renderQuotes();
    saveNow();
  }));
  picks.forEach((p) => p.addEventListener("change", renderPicks));
  renderPicks();
  if (quotes.length) renderQuotes();
})();

// Site-wide behaviour that the Content-Security-Policy keeps out of inline attributes.
document.addEventListener("click", (event) => {
  const target = event.target;
  if (target instanceof HTMLInputElement && target.matches("input.select-on-click")) {
    target.select();
  }
});

// Uploads (forms with data-max-upload-bytes): a file over the limit is refused before it is
// sent (the server would refuse it from its Content-Length anyway), and the upload shows its
// progress (htmx reports the request body's progress).
const megabytes = (bytes) => `${(bytes / 1048576).toFixed(1)} MB`;  // as config.middleware says it
document.addEventListener("change", (event) => {
  const input = event.target;
  const limit = Number(input.form && input.form.dataset.maxUploadBytes);
  if (!(input instanceof HTMLInputElement) || input.type !== "file" || !limit) return;
  const file = input.files[0];
  input.setCustomValidity(file && file.size > limit
    ? `This file is ${megabytes(file.size)}; the limit is ${megabytes(limit)} per file. Nothing was sent.`
    : "");
  input.reportValidity();
});
const uploadForm = (event) =>
  event.target instanceof Element && event.target.closest("form[data-max-upload-bytes]");
document.addEventListener("htmx:beforeSend", (event) => {
  const form = uploadForm(event);
  if (form) delete form.dataset.uploadSent;
});
document.addEventListener("htmx:xhr:progress", (event) => {
  // htmx reports the upload's progress, then the answer's: only the first is shown
  const form = uploadForm(event);
  if (!form || form.dataset.uploadSent || !event.detail.lengthComputable) return;
  const box = form.querySelector(".upload-progress");
  const { loaded, total } = event.detail;
  box.hidden = false;
  box.querySelector("progress").max = total;
  box.querySelector("progress").value = loaded;
  if (loaded < total) {
    box.querySelector("span").textContent =
      `${Math.floor((100 * loaded) / total)}% of ${megabytes(total)} sent`;
  } else {
    form.dataset.uploadSent = "1";
    box.querySelector("span").textContent = `${megabytes(total)} sent; checking every line…`;
  }
});

// A form sent by htmx whose request failed (a 5xx, or no answer at all) says so in its
// `[data-htmx-error]` element instead of leaving the page as it was (htmx swaps nothing then).
const failedForm = (event) => {
  const form = event.target instanceof Element && event.target.closest("form");
  return form && form.querySelector("[data-htmx-error]");
};
const showFailure = (event, text) => {
  const box = failedForm(event);
  if (!box) return;
  box.textContent = text;
  box.hidden = false;
};
// A form marked `data-swap-errors` shows its 4xx answers (they carry their own message: "wait
// until both systems have answered", a rate limit), which base.html's responseHandling would
// otherwise drop.
document.addEventListener("htmx:beforeSwap", (event) => {
  const status = event.detail.xhr.status;
  const elt = event.detail.requestConfig && event.detail.requestConfig.elt;
  if (status >= 400 && status < 500 && elt && elt.closest && elt.closest("form[data-swap-errors]")) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});
document.addEventListener("htmx:responseError", (event) => {
  const status = event.detail.xhr.status;
  if (status < 500) return;
  showFailure(event, `Sending failed: the server answered ${status}. Nothing was lost: ` +
    "send it again, or abandon the battle.");
});
document.addEventListener("htmx:sendError", (event) => {
  showFailure(event, "Sending failed: the server could not be reached. Nothing was lost: " +
    "send it again, or abandon the battle.");
});

// Keyboard focus after an htmx swap (issue 34): when the swap took the focused control away
// ("Send to both" and "Upload and evaluate" are disabled, then replaced), focus falls to the
// page's top. It moves instead to the next control the new content offers: the visible
// `[data-focus-next]` element with the lowest value (1 first), if focus was lost.
const focusNext = () => {
  const active = document.activeElement;
  if (active && active !== document.body && active.isConnected) return;
  const usable = [...document.querySelectorAll("[data-focus-next]")]
    .filter((el) => !el.disabled && !el.closest("[hidden]") && el.getClientRects().length)
    .sort((a, b) => Number(a.dataset.focusNext) - Number(b.dataset.focusNext));
  if (usable.length) usable[0].focus();
};
document.addEventListener("htmx:afterSettle", focusNext);
document.addEventListener("htmx:oobAfterSwap", focusNext);

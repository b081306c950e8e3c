// The review queue: keys record grades and fetch the next item without a page reload.
//
// Every action is an ordinary form in the panel, so the queue also works
// without this script. Here each key "clicks" the control marked data-key="<key>" in
// the current panel; forms marked data-queue-form are sent with fetch (the CSRF token
// travels in the form data) and the server answers JSON carrying the next panel's HTML.
// While a request is in flight further keys are ignored, so a double press can never
// grade the next item by accident.
(function () {
  "use strict";
  const root = document.querySelector("[data-review]");
  if (!root) return;
  const panel = document.getElementById("queue-panel");
  const statusBox = document.getElementById("queue-status");
  const dialog = document.getElementById("keys-dialog");
  let busy = false;

  function typing(el) {
    return !!el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }

  function say(text, isError) {
    statusBox.textContent = text || "";
    statusBox.classList.toggle("is-error", !!isError);
    // An error interrupts; a confirmation waits its turn.
    statusBox.setAttribute("aria-live", isError ? "assertive" : "polite");
  }

  function setProgress(progress) {
    for (const [key, value] of Object.entries(progress || {})) {
      const el = root.querySelector(`[data-progress="${key}"]`);
      if (el) el.textContent = String(value);
    }
    const plural = root.querySelector('[data-plural="open"]');
    // progress.open is a number, or the text "more than 1,000" (a capped count).
    if (plural && progress && "open" in progress) plural.textContent = progress.open === 1 ? "" : "s";
  }

  function swap(html) {
    const guidelines = panel.querySelector("[data-guidelines]");
    const wasOpen = guidelines ? guidelines.open : false;
    panel.innerHTML = html;
    const fresh = panel.querySelector("[data-guidelines]");
    if (fresh) fresh.open = wasOpen;
    const focusTarget =
      panel.querySelector("[data-autofocus]") || panel.querySelector(".conflict-title, .item-title");
    if (focusTarget) focusTarget.focus({ preventScroll: true });
    const top = panel.getBoundingClientRect().top;
    if (top < 0 || top > window.innerHeight) panel.scrollIntoView({ block: "start" });
  }

  async function send(url, init) {
    busy = true;
    panel.setAttribute("aria-busy", "true");
    try {
      const response = await fetch(url, {
        ...init,
        credentials: "same-origin",
        cache: "no-store",
        headers: { Accept: "application/json", "X-Requested-With": "fetch" },
      });
      let data;
      try {
        data = await response.json();
      } catch (_) {
        data = {
          ok: false,
          error: `Not saved: the server answered ${response.status} ${response.statusText}. Reload the page and try again.`,
        };
      }
      if (typeof data.html === "string") swap(data.html);
      if (data.progress) setProgress(data.progress);
      say(data.error || data.message, !!data.error);
      if (response.status === 401 && data.login) {
        const next = encodeURIComponent(location.pathname);
        statusBox.insertAdjacentHTML("beforeend", ` <a href="${data.login}?next=${next}">Log in</a>`);
      }
    } catch (_) {
      say("Not saved: the request did not reach the server. Check the connection and press the key again.", true);
    } finally {
      busy = false;
      panel.removeAttribute("aria-busy");
    }
  }

  panel.addEventListener("submit", (event) => {
    const form = event.target.closest("form[data-queue-form]");
    if (!form) return;
    event.preventDefault();
    if (busy) return;
    send(form.action, { method: "POST", body: new FormData(form, event.submitter) });
  });

  // A GET never claims a task: with nothing held, the page offers a button that claims the
  // next one by POST. Press it at once, so the reviewer goes straight to an item; without
  // this script, Enter on the focused button does the same.
  function autoclaim() {
    const form = panel.querySelector("form[data-autoclaim]");
    if (form && !busy) return send(form.action, { method: "POST", body: new FormData(form) });
  }

  // A page brought back by Back or Forward comes from the browser's caches as it was left
  // (the back/forward cache restores it whole, "persisted"; the HTTP cache gives its first
  // HTML again): an item judged since, and an old count. Ask for the queue as it is now,
  // and claim the next task if the reviewer holds none any more.
  window.addEventListener("pageshow", (event) => {
    const nav = performance.getEntriesByType("navigation")[0];
    const fromHistory = event.persisted || (nav && nav.type === "back_forward");
    if (fromHistory && !busy) send(root.dataset.refresh, { method: "GET" }).then(autoclaim);
  });
  autoclaim();

  function openKeys() {
    if (dialog.open) return;
    dialog.showModal();
    // showModal focuses the first control, the Close button at the bottom, and scrolls
    // there: start at the top, on the title, instead.
    dialog.querySelector("#keys-title").focus();
    dialog.scrollTop = 0;
  }
  root.querySelector("[data-open-keys]").addEventListener("click", openKeys);

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    const el = event.target;
    if (typing(el)) {
      // In the note field Enter and Esc hand the keyboard back to the queue; Enter must
      // never submit a grade on its own.
      if (el.matches("[data-search]") && event.key === "Escape") {
        event.preventDefault();
        el.blur();
        panel.querySelector(".item-title")?.focus({ preventScroll: true });
      }
      if (el.matches("[data-note]") && (event.key === "Enter" || event.key === "Escape")) {
        event.preventDefault();
        el.blur();
        panel.querySelector(".item-title")?.focus({ preventScroll: true });
      }
      return;
    }
    if (dialog.open) return; // the dialog closes itself on Esc
    if (event.key === "?") {
      event.preventDefault();
      openKeys();
      return;
    }
    if (event.key === "n") {
      const note = panel.querySelector("[data-note]");
      if (note) {
        event.preventDefault();
        note.focus();
      }
      return;
    }
    if (event.key === "/") {
      const search = panel.querySelector("[data-search]");
      if (search) {
        event.preventDefault();
        search.focus();
      }
      return;
    }
    if (event.key === "g") {
      const guidelines = panel.querySelector("[data-guidelines]");
      if (guidelines) {
        event.preventDefault();
        guidelines.open = !guidelines.open;
      }
      return;
    }
    if (event.key.length !== 1) return;
    const control = panel.querySelector(`[data-key="${CSS.escape(event.key)}"]`);
    if (!control || control.disabled) return;
    event.preventDefault();
    if (busy) return;
    control.click();
  });
})();

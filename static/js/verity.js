// Small enhancements shared by the pages; every page works without them.
(function () {
  "use strict";
  // After a refused change or a conflict, put the keyboard where the explanation is,
  // so that a keyboard or screen-reader user lands on it instead of the page top.
  const target =
    document.querySelector("[data-autofocus]") ||
    document.querySelector(".conflict [tabindex='-1'], .msg.error[role='alert']");
  if (target) {
    if (!target.hasAttribute("tabindex") && !/^(A|BUTTON|INPUT|SELECT|TEXTAREA)$/.test(target.tagName)) {
      target.setAttribute("tabindex", "-1");
    }
    target.focus();
    // A page reached at a fragment (#evidence) is scrolled there after loading, which
    // takes the focus back to the page: give it to the explanation again.
    window.addEventListener("load", () => {
      if (document.activeElement !== target) target.focus({ preventScroll: true });
    });
  }

  // One submission per form and page load: a double click must not send an edit twice
  // (the second would be refused as stale and look like a conflict).
  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (form.dataset.submitted) {
      event.preventDefault();
      return;
    }
    form.dataset.submitted = "true";
  });
  // A form whose answer takes seconds (a comparison: bootstrap and randomization test)
  // says so while the next page is computed, instead of looking stuck.
  document.addEventListener("submit", (event) => {
    const form = event.target;
    const text = form.dataset && form.dataset.busy;
    if (!text || event.defaultPrevented) return;
    let status = form.querySelector(".busy");
    if (!status) {
      status = document.createElement("p");
      status.className = "busy";
      status.setAttribute("role", "status");
      form.appendChild(status);
    }
    status.textContent = text;
    form.setAttribute("aria-busy", "true");
    for (const button of form.querySelectorAll("button[type=submit], button:not([type])")) button.disabled = true;
  });
  // Coming back with the Back button restores the page as it was: allow submitting again.
  window.addEventListener("pageshow", (event) => {
    if (!event.persisted) return;
    for (const form of document.querySelectorAll("form[data-submitted]")) delete form.dataset.submitted;
    for (const form of document.querySelectorAll("form[aria-busy]")) {
      form.removeAttribute("aria-busy");
      for (const button of form.querySelectorAll("button:disabled")) button.disabled = false;
      for (const status of form.querySelectorAll(".busy")) status.remove();
    }
  });
})();

// The ranked list of a run for one query: on a focused unjudged row, a grade's digit
// presses that grade's button (the review queue's keys: buttons marked data-key). The
// buttons are ordinary form posts to the query page, so the page works without this.
(function () {
  "use strict";
  const root = document.querySelector("[data-ranked-list]");
  if (!root) return;
  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    const row = event.target.closest && event.target.closest("[data-grade-row]");
    if (!row || /^(INPUT|TEXTAREA|SELECT)$/.test(event.target.tagName)) return;
    if (event.key.length !== 1) return;
    const button = row.querySelector(`button[data-key="${CSS.escape(event.key)}"]`);
    if (!button || button.disabled) return;
    event.preventDefault();
    button.click();
  });
})();

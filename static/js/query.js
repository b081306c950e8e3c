// The query page from the keyboard: move between items, grade the one in focus with a
// digit, search with "/".
//
// Every item row (judged, waiting, found by search) is focusable and holds an ordinary
// grade form, so the page works without this script. A digit picks that grade in the
// row's form and submits it; the page comes back on the next waiting item when the
// graded one was waiting (so a query's items can be judged one key each), else on the
// graded item.
(function () {
  "use strict";
  const NEXT_KEY = "verity.query.focus";
  const rows = () => Array.from(document.querySelectorAll("[data-grade-row]"));

  function typing(el) {
    return !!el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }

  function focusRow(row) {
    if (!row) return;
    row.focus({ preventScroll: true });
    row.scrollIntoView({ block: "nearest" });
  }

  // Where to land after a reload: the row a grade asked for, else the one in the URL.
  const wanted = sessionStorage.getItem(NEXT_KEY);
  sessionStorage.removeItem(NEXT_KEY);
  const landing =
    (wanted && document.getElementById(wanted)) ||
    (location.hash && document.getElementById(location.hash.slice(1)));
  if (landing && landing.matches("[data-grade-row]") && !document.querySelector("[data-autofocus], .conflict")) {
    focusRow(landing);
  }

  function grade(row, key) {
    const form = row.querySelector("form.grade-edit");
    const select = form && form.querySelector("select[name=grade]");
    if (!select || !Array.from(select.options).some((o) => o.value === key)) return false;
    select.value = key;
    if (row.matches("[data-waiting]")) {
      const waiting = Array.from(document.querySelectorAll("[data-waiting]"));
      const next = waiting[waiting.indexOf(row) + 1] || waiting[waiting.indexOf(row) - 1];
      if (next) sessionStorage.setItem(NEXT_KEY, next.id);
    }
    form.requestSubmit();
    return true;
  }

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    const el = event.target;
    if (typing(el)) {
      if (event.key === "Escape") {
        const row = el.closest("[data-grade-row]");
        el.blur();
        if (row) focusRow(row);
      }
      return;
    }
    if (event.key === "/") {
      const box = document.querySelector("[data-search]");
      if (box) {
        event.preventDefault();
        box.focus();
        box.select();
      }
      return;
    }
    const all = rows();
    const row = el.closest ? el.closest("[data-grade-row]") : null;
    if (event.key === "ArrowDown" || event.key === "j" || event.key === "ArrowUp" || event.key === "k") {
      if (!all.length) return;
      event.preventDefault();
      const down = event.key === "ArrowDown" || event.key === "j";
      const at = row ? all.indexOf(row) : -1;
      const to = at < 0 ? (down ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + (down ? 1 : -1)));
      focusRow(all[to]);
      return;
    }
    if (row && /^[0-9]$/.test(event.key) && row === el) {
      if (grade(row, event.key)) event.preventDefault();
    }
  });
})();

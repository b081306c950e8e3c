// One key per button: on a page marked data-adjudicate, pressing a key clicks the button
// whose data-key is that key (the grade's digit), unless the focus is in a text field.
(() => {
  "use strict";
  const root = document.querySelector("[data-adjudicate]");
  if (!root) return;
  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    const el = event.target;
    if (el.closest && el.closest("input, textarea, select, [contenteditable]")) return;
    if (event.key.length !== 1) return;
    const control = root.querySelector(`[data-key="${CSS.escape(event.key)}"]`);
    if (!control || control.disabled) return;
    event.preventDefault();
    control.click();
  });
})();

// A running job's page: poll the job's JSON (the API) and move the progress bar; when the
// job ends, reload, and the server renders its result or its error (or sends the browser
// to the report the job made). Without this script the page reloads itself (noscript).
(function () {
  "use strict";
  const box = document.querySelector("[data-job]");
  if (!box) return;
  const api = box.dataset.jobApi;
  const bar = box.querySelector("progress");
  const field = (name) => box.querySelector(`[data-field="${name}"]`);
  const EVERY_MS = 1000;

  function show(job) {
    field("state").textContent = job.state;
    field("phase").textContent =
      job.phase || (job.state === "queued" ? "waiting for a worker" : "started, reading its input");
    const counts = field("counts");
    // The bar is the whole job's percent (it only grows); the counts are this phase's.
    if (job.percent !== null && job.percent !== undefined) {
      bar.max = 100;
      bar.value = job.percent;
      bar.textContent = `${job.percent}%`;
    } else {
      bar.removeAttribute("value"); // indeterminate: nothing counted yet
    }
    const phase = job.total ? `${job.done} of ${job.total}` : job.done ? `${job.done} done` : "";
    const whole = job.percent !== null && job.percent !== undefined ? `${job.percent}% of the job` : "";
    counts.textContent = [phase, whole].filter(Boolean).join("; ");
    field("waiting").textContent = job.waiting || "";
  }

  async function poll() {
    try {
      const response = await fetch(api, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      if (response.ok) {
        const job = await response.json();
        show(job);
        if (job.state === "done" || job.state === "failed" || job.state === "cancelled") {
          window.location.reload();
          return;
        }
      }
    } catch (_) {
      // A lost poll is retried; the job runs on the server whatever happens here.
    }
    window.setTimeout(poll, EVERY_MS);
  }
  window.setTimeout(poll, EVERY_MS);
})();

/* Reports, diagnosis and comparison pages: sortable tables, the tag filter, and the
 * charts (Chart.js, vendored in static/vendor/chartjs). Every number is in the page's
 * HTML already; this script only sorts, filters and draws. */
(function () {
  "use strict";

  // -- sortable tables: <table data-sortable>, <th><button>, cells with data-sort -------
  function cellKey(row, index) {
    var cell = row.cells[index];
    if (!cell) return "";
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
    return raw;
  }

  function compareKeys(a, b) {
    // Undefined (empty) sorts last in both directions: handled by the caller.
    var na = Number(a), nb = Number(b);
    if (a !== "" && b !== "" && !isNaN(na) && !isNaN(nb)) return na - nb;
    return String(a).localeCompare(String(b), undefined, { numeric: true });
  }

  function sortTable(table, index, th) {
    var current = th.getAttribute("aria-sort");
    var direction = current === "ascending" ? "descending" : "ascending";
    table.querySelectorAll("thead th[aria-sort]").forEach(function (h) {
      h.setAttribute("aria-sort", "none");
    });
    th.setAttribute("aria-sort", direction);
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var sign = direction === "ascending" ? 1 : -1;
    rows.sort(function (r1, r2) {
      var a = cellKey(r1, index), b = cellKey(r2, index);
      if (a === "" && b === "") return 0;
      if (a === "") return 1;
      if (b === "") return -1;
      return sign * compareKeys(a, b);
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }

  function setUpSorting() {
    document.querySelectorAll("table[data-sortable]").forEach(function (table) {
      var heads = table.tHead ? table.tHead.rows[0].cells : [];
      Array.prototype.forEach.call(heads, function (th, index) {
        var button = th.querySelector("button");
        if (!button) return;
        button.addEventListener("click", function () { sortTable(table, index, th); });
      });
    });
  }

  // -- the tag filter: <select data-filter-table="ID">, rows with data-tags='["a"]' -----
  function setUpFilters() {
    document.querySelectorAll("select[data-filter-table]").forEach(function (select) {
      var id = select.getAttribute("data-filter-table");
      var table = document.getElementById(id);
      var counter = document.querySelector('[data-filter-count="' + id + '"]');
      if (!table) return;
      function apply() {
        var tag = select.value, shown = 0, total = 0;
        Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
          if (!row.hasAttribute("data-tags")) return;
          total += 1;
          var tags = JSON.parse(row.getAttribute("data-tags") || "[]");
          var visible = !tag || tags.indexOf(tag) !== -1;
          row.hidden = !visible;
          if (visible) shown += 1;
        });
        if (counter) counter.textContent = tag ? shown + " of " + total + " queries" : "";
      }
      select.addEventListener("change", apply);
      apply();
    });
  }

  // -- charts ---------------------------------------------------------------------------
  var BLUE = "#0b5cad", GREY = "#8c959f", GREEN = "#1a7f37", RED = "#cf222e", AMBER = "#bf8700";

  function readJSON(id) {
    var el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }

  function percent(v) { return (v * 100).toFixed(2) + "%"; }

  function baseOptions() {
    return {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      plugins: { legend: { position: "bottom", labels: { boxWidth: 12 } } },
    };
  }

  function reportCharts(data) {
    var sizes = document.getElementById("chart-sizes");
    if (sizes) {
      new window.Chart(sizes, {
        type: "bar",
        data: {
          labels: data.relevant_sizes.map(function (p) { return String(p[0]); }),
          datasets: [{ label: "queries", data: data.relevant_sizes.map(function (p) { return p[1]; }), backgroundColor: BLUE }],
        },
        options: Object.assign(baseOptions(), {
          plugins: { legend: { display: false } },
          scales: {
            x: { title: { display: true, text: "relevant-set size |G|" } },
            y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "queries" } },
          },
        }),
      });
    }
    var recall = document.getElementById("chart-recall");
    var select = document.getElementById("recall-k");
    if (!recall) return;
    var chart = null;
    function draw() {
      var k = select ? select.value : String(data.ks[data.ks.length - 1]);
      var rec = data.recall[k] || [], ceil = data.ceiling[k] || [];
      // Under the bounds policy a recall is [low, high]: a solid bar to the low end
      // (unjudged as non-relevant) and a light one on top up to the high end.
      var bounds = rec.some(function (v) { return v !== null && typeof v === "object"; });
      var low = rec.map(function (v) { return v === null || v === undefined ? null : typeof v === "object" ? v.low : v; });
      var extra = rec.map(function (v) { return v !== null && typeof v === "object" ? v.high - v.low : 0; });
      var config = {
        data: {
          labels: data.order,
          datasets: [
            { type: "scatter", stack: "ceiling", label: "ceiling min(k,|G|)/|G|", data: ceil.map(function (v, i) { return { x: data.order[i], y: v }; }), backgroundColor: AMBER, borderColor: AMBER, pointStyle: "line", pointRadius: 16, pointHoverRadius: 18, pointBorderWidth: 4 },
            { type: "bar", label: bounds ? "recall at " + k + ", unjudged as non-relevant" : "recall at " + k, data: low, backgroundColor: BLUE, stack: "recall" },
          ].concat(bounds ? [{ type: "bar", label: "… up to: unjudged as relevant", data: extra, backgroundColor: "#9ec5ec", stack: "recall" }] : []),
        },
        options: Object.assign(baseOptions(), {
          scales: {
            x: { type: "category", stacked: true, ticks: { autoSkip: true, maxRotation: 60 } },
            y: { min: 0, max: 1, stacked: true, ticks: { callback: function (v) { return Math.round(v * 100) + "%"; } } },
          },
          plugins: {
            legend: { position: "bottom", labels: { boxWidth: 12 } },
            tooltip: { callbacks: { label: function (ctx) {
              var v = ctx.raw;
              if (v && typeof v === "object" && "y" in v) return ctx.dataset.label + ": " + percent(v.y);
              var r = rec[ctx.dataIndex];
              if (r !== null && typeof r === "object") return "recall at " + k + ": [" + percent(r.low) + ", " + percent(r.high) + "]";
              return ctx.dataset.label + ": " + percent(v);
            } } },
          },
        }),
      };
      if (chart) chart.destroy();
      chart = new window.Chart(recall, config);
    }
    if (select) select.addEventListener("change", draw);
    draw();
  }

  function diagnosisCharts(data) {
    var canvas = document.getElementById("chart-outcomes");
    if (!canvas) return;
    var palette = [RED, AMBER, "#8250df", "#0969da", GREEN];
    var n = data.outcomes.length;
    var datasets = data.outcomes.map(function (o, i) {
      var colour = i === 0 ? RED : i === n - 1 ? GREEN : palette[1 + ((i - 1) % 3)];
      return { label: o.label, data: [data.totals[o.key]], backgroundColor: colour };
    });
    new window.Chart(canvas, {
      type: "bar",
      data: { labels: ["relevant items"], datasets: datasets },
      options: Object.assign(baseOptions(), {
        indexAxis: "y",
        scales: { x: { stacked: true, beginAtZero: true, ticks: { precision: 0 } }, y: { stacked: true, display: false } },
      }),
    });
  }

  function compareCharts(data) {
    var canvas = document.getElementById("chart-diffs");
    var select = document.getElementById("diff-measure");
    if (!canvas || !data.measures.length) return;
    var chart = null;
    function draw() {
      var key = select ? select.value : data.measures[0];
      var v = data.values[key];
      var rate = data.rates[key];
      var rows = v.queries.map(function (q, i) { return { q: q, d: v.a[i] - v.b[i] }; });
      rows.sort(function (x, y) { return y.d - x.d; });
      var fmt = rate ? function (d) { return (d * 100).toFixed(2) + " pp"; } : function (d) { return d.toFixed(4); };
      var config = {
        type: "bar",
        data: {
          labels: rows.map(function (r) { return r.q; }),
          datasets: [{
            label: key + ": a − b",
            data: rows.map(function (r) { return r.d; }),
            backgroundColor: rows.map(function (r) { return r.d > 0 ? GREEN : r.d < 0 ? RED : GREY; }),
          }],
        },
        options: Object.assign(baseOptions(), {
          plugins: {
            legend: { display: false },
            tooltip: { callbacks: { label: function (ctx) { return "a − b = " + fmt(ctx.raw); } } },
          },
          scales: {
            x: { ticks: { autoSkip: true, maxRotation: 60 } },
            y: { ticks: { callback: function (d) { return rate ? Math.round(d * 100) + " pp" : d; } } },
          },
        }),
      };
      if (chart) chart.destroy();
      chart = new window.Chart(canvas, config);
      document.querySelectorAll("[data-measure-table]").forEach(function (t) {
        t.hidden = t.getAttribute("data-measure-table") !== key;
      });
      document.querySelectorAll("[data-query-table]").forEach(function (t) {
        t.hidden = t.getAttribute("data-query-table") !== key;
      });
    }
    if (select) select.addEventListener("change", draw);
    draw();
  }

  function start() {
    setUpSorting();
    setUpFilters();
    if (!window.Chart) return; // the tables carry every number; charts are extra
    var report = readJSON("report-data");
    if (report) reportCharts(report);
    var diagnosis = readJSON("diagnosis-data");
    if (diagnosis) diagnosisCharts(diagnosis);
    var compare = readJSON("compare-data");
    if (compare) compareCharts(compare);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

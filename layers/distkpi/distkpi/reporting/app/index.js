"use strict";
/* index.html: every history with its latest verdict and a sparkline (api/index.json). */
(() => {
  const { el, load, number, short, day, report, modelLink, say, ready } = distkpi;
  const SVG = "http://www.w3.org/2000/svg";

  function sparkline(spark) {
    const values = (spark && spark.values || []).filter((v) => v !== null && Number.isFinite(v));
    if (values.length < 2) return el("span", { class: "hint" }, values.length ? number(values[0]) : "-");
    const width = 140, height = 28, low = Math.min(...values), high = Math.max(...values);
    const span = high - low || 1;
    const points = values.map((v, i) => {
      const x = (i / (values.length - 1)) * (width - 4) + 2;
      const y = height - 2 - ((v - low) / span) * (height - 4);
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    });
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("class", "spark");
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("points", points.join(" "));
    line.setAttribute("fill", "none");
    line.setAttribute("stroke", "#1f77b4");
    line.setAttribute("stroke-width", "1.5");
    const title = document.createElementNS(SVG, "title");
    title.textContent = `${spark.kpi} of ${spark.config}, the last ${values.length} runs: ` +
      `${number(values[0])} to ${number(values[values.length - 1])}`;
    svg.append(title, line);
    return el("span", {}, svg, " ", el("span", { class: "hint" }, `${spark.config}: ${number(values[values.length - 1])}`));
  }

  function row(history) {
    const latest = history.latest || {};
    return el("tr", { class: "history" },
      el("td", {}, history.repo),
      el("td", {}, history.branch),
      el("td", {}, el("a", { href: modelLink(history) }, history.model)),
      el("td", { class: "num" }, history.runs),
      el("td", { class: latest.verdict || "" }, latest.verdict || "-"),
      el("td", {}, latest.run_id
        ? [el("a", { href: report(latest.run_id) }, short(latest.sha)), " ", day(latest.finished_at)]
        : "-"),
      el("td", {}, sparkline(history.sparkline)));
  }

  load("index.json").then((index) => {
    const histories = index.histories || [];
    const table = document.getElementById("histories");
    table.tBodies[0].append(...histories.map(row));
    table.hidden = histories.length === 0;
    document.getElementById("updated").textContent = `Updated ${day(index.updated_at)} UTC.`;
    say(histories.length ? "" : "No history yet: no run has been published.", "info");
    ready();
  }).catch((error) => say(error instanceof distkpi.NotFound
    ? "api/index.json is not there: no run has been published to this site yet." : String(error)));
})();

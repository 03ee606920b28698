"use strict";
/* compare.html?a=RUN&b=RUN: every KPI of every config of two runs (api/runs/<id>.json) side
by side, B − A, and the noise it is judged against. */
(() => {
  const { el, load, number, percent, short, day, params, say, ready } = distkpi;
  const $ = (id) => document.getElementById(id);

  /** The KPI names in the runs' order ("kpis" is the run's `distkpi kpis --json`, not a
  list of KPIs: the names are its configs' judged KPIs). */
  function kpiNames(a, b) {
    const names = [];
    for (const run of [a, b]) {
      for (const config of Object.values(run.configs || {})) {
        for (const name of Object.keys(config)) if (!names.includes(name)) names.push(name);
      }
    }
    return names;
  }

  // a report link is relative to the site's root; anything with a scheme (javascript:) is not
  const relative = (href) => typeof href === "string" && href !== "" && !/^[a-z][a-z0-9+.-]*:/i.test(href);


  function runRow(which, run) {
    return el("tr", { class: "run" }, el("th", {}, which),
      el("td", {}, relative(run.report) ? el("a", { href: run.report }, run.run_id) : run.run_id),
      el("td", {}, el("code", { title: run.sha }, short(run.sha))),
      el("td", {}, `${run.repo} ${run.branch}`), el("td", {}, day(run.finished_at)),
      el("td", { class: run.verdict }, run.verdict));
  }

  function deltaRow(config, name, a, b, kpiLabel) {
    const va = a ? a.value : null, vb = b ? b.value : null;
    let delta = va !== null && vb !== null ? vb - va : null;
    // a difference in the last bits of two doubles is no difference
    if (delta !== null && Math.abs(delta) <= 1e-12 * Math.max(Math.abs(va), Math.abs(vb))) delta = 0;
    const relative = delta !== null && va !== 0 ? delta / Math.abs(va) : null;
    const noise = b && b.noise !== null && b.noise !== undefined ? b.noise : a ? a.noise : null;
    const beyond = relative !== null && noise !== null && noise !== undefined && Math.abs(relative) > noise;
    return el("tr", { class: "delta", "data-config": config, "data-kpi": name },
      el("td", {}, config), el("td", {}, kpiLabel),
      el("td", { class: "num" }, number(va)), el("td", { class: "num" }, number(vb)),
      el("td", { class: `num${beyond ? " beyond" : ""}` }, delta === null ? "-" : `${delta > 0 ? "+" : ""}${number(delta)}`),
      el("td", { class: `num${beyond ? " beyond" : ""}` }, percent(relative)),
      el("td", { class: "num" }, noise === null || noise === undefined ? "-" : `±${(noise * 100).toFixed(1)}%`),
      el("td", { class: a && a.verdict || "" }, a && a.verdict || "-"),
      el("td", { class: b && b.verdict || "" }, b && b.verdict || "-"));
  }

  async function main() {
    const query = params();
    const [a, b] = [query.get("a"), query.get("b")];
    const form = $("choose");
    form.a.value = a || "";
    form.b.value = b || "";
    $("swap").href = `compare.html?${new URLSearchParams({ a: b || "", b: a || "" })}`;
    if (!a || !b) {
      say("Name two runs (compare.html?a=RUN&b=RUN), or pick two points on a model's charts.", "info");
      ready();
      return;
    }
    const missing = (id) => (error) => {
      throw error instanceof distkpi.NotFound ? new Error(`There is no run ${id} on this site (api/runs/${id}.json).`) : error;
    };
    const [runA, runB] = await Promise.all([
      load(`runs/${a}.json`).catch(missing(a)), load(`runs/${b}.json`).catch(missing(b))]);
    $("runs").tBodies[0].append(runRow("A", runA), runRow("B", runB));
    $("runs").hidden = false;
    if (runA.model !== runB.model) say(`A is ${runA.model} and B is ${runB.model}: only configs of the same name are compared.`, "info");
    const configs = [...new Set([...Object.keys(runA.configs || {}), ...Object.keys(runB.configs || {})])];
    const names = kpiNames(runA, runB);
    const rows = [];
    for (const config of configs) {
      const ka = (runA.configs || {})[config] || {}, kb = (runB.configs || {})[config] || {};
      for (const name of names) {
        if (ka[name] || kb[name]) rows.push(deltaRow(config, name, ka[name], kb[name], name));
      }
    }
    $("deltas").tBodies[0].append(...rows);
    $("deltas").hidden = false;
    ready();
  }

  main().catch((error) => { say(String(error.message || error)); ready(); });
})();

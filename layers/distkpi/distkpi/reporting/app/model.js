"use strict";
/* model.html?series=<path under api/> (or ?repo=&branch=&model=, found in api/index.json),
optionally &run=<run_id> (that run's point, as a run's report links it), &from=&to=
(months, YYYY-MM), &mode=time, &hardware=, &hide=<config>,<config>.

One chart per KPI (uPlot), over the runs of the months shown: only those months' chunk
files are read. Each config a line, the range each run was allowed a band of its colour,
regressed and improved points marked, and the series' marks drawn as vertical lines. */
(() => {
  const { el, load, number, short, day, report, params, say, ready } = distkpi;
  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"];
  const MARKS = {
    change_point: ["#7b1fa2", [6, 4]],
    reset: ["#e65100", [2, 3]],
    accepted: ["#2e7d32", [8, 3]],
    culprit: ["#c62828", []],
  };
  const BETWEEN_RUNS = new Set(["change_point", "reset"]); // drawn before their run
  // the page opens on the newest months holding at most this many points (config-runs),
  // and at least one month: what it reads, and so how soon it answers, grows with them
  const FIRST_POINTS = 8000;
  const PER_CONFIG = 5; // its value, lower and upper bounds, regressed and improved points
  const HEIGHT = 220;
  const NEAR = 400; // px: a chart is drawn once it comes this close to the screen

  const view = {
    head: null, chunks: [], first: 0, last: 0, points: [], runs: [], index: new Map(),
    mode: "commits", hardware: "", hidden: new Set(), charts: [], focus: null, hover: null,
    picks: [], extent: [0, 1], range: [0, 1],
  };
  window.distkpiView = view; // what the browser tests read beside the page

  const $ = (id) => document.getElementById(id);
  const month = (chunk) => chunk.from.slice(0, 7);
  const seconds = (iso) => Date.parse(iso) / 1000;

  async function seriesPath(query) {
    if (query.get("series")) return query.get("series");
    const [repo, branch, model] = ["repo", "branch", "model"].map((k) => query.get(k));
    if (!repo || !branch || !model) {
      throw new Error("model.html needs ?series=<path under api/>, or ?repo=&branch=&model=");
    }
    const index = await load("index.json");
    const found = (index.histories || []).find(
      (h) => h.repo === repo && h.branch === branch && h.model === model);
    if (!found) throw new Error(`api/index.json has no history of ${model} on ${repo} ${branch}`);
    return found.series;
  }

  /** The months to read first: those asked for, the focus run's, else the newest. */
  async function chooseMonths(query) {
    const months = view.chunks.map(month);
    const last = view.chunks.length - 1;
    let points = view.chunks[last].points;
    view.first = last;
    while (view.first > 0 && points + view.chunks[view.first - 1].points <= FIRST_POINTS) {
      points += view.chunks[--view.first].points;
    }
    view.last = last;
    if (query.get("from") && months.includes(query.get("from"))) view.first = months.indexOf(query.get("from"));
    if (query.get("to") && months.includes(query.get("to"))) view.last = months.lastIndexOf(query.get("to"));
    if (view.last < view.first) [view.first, view.last] = [view.last, view.first];
    const runId = query.get("run");
    if (!runId) return;
    let run;
    try {
      run = await load(`runs/${runId}.json`);
    } catch (error) {
      say(`Run ${runId}: ${error.message}; showing the newest months.`);
      return;
    }
    view.focus = runId;
    const at = run.finished_at;
    let holding = view.chunks.findIndex((c) => c.from <= at && at <= c.to);
    if (holding < 0) holding = view.chunks.findIndex((c) => at <= c.to);
    if (holding >= 0 && (holding < view.first || holding > view.last)) {
      view.first = Math.max(0, holding - 1);
      view.last = Math.min(last, holding + 1);
    }
  }

  async function readMonths() {
    const chunks = view.chunks.slice(view.first, view.last + 1);
    const status = $("status");
    const quiet = status.className !== "error"; // a problem said before stays said
    if (quiet) say(`Reading ${chunks.length} month(s) of runs…`, "info");
    const documents = await Promise.all(chunks.map((c) => load(c.path)));
    view.points = documents.flatMap((d) => d.points || []);
    if (quiet) say("", "info");
  }

  /** The runs shown, oldest first: the points of the months read, on the hardware chosen. */
  function gatherRuns() {
    const byRun = new Map();
    for (const point of view.points) {
      if (view.hardware && point.hardware !== view.hardware) continue;
      let run = byRun.get(point.run_id);
      if (!run) {
        run = {
          run_id: point.run_id, sha: point.sha, author: point.author, verdict: point.verdict,
          finished_at: point.finished_at, t: seconds(point.finished_at), configs: {},
        };
        byRun.set(point.run_id, run);
      }
      run.configs[point.config] = point;
    }
    view.runs = [...byRun.values()].sort((a, b) => a.t - b.t);
    view.index = new Map(view.runs.map((run, i) => [run.run_id, i]));
  }

  const xOf = (i) => (view.mode === "time" ? view.runs[i].t : i);

  function data(kpi) {
    const n = view.runs.length;
    const columns = [Array.from({ length: n }, (_, i) => xOf(i))];
    for (const config of view.head.configs) {
      const value = new Array(n), lower = new Array(n), upper = new Array(n);
      const bad = new Array(n), good = new Array(n);
      for (let i = 0; i < n; i++) {
        const point = view.runs[i].configs[config];
        const k = point && point.kpis[kpi];
        value[i] = k ? k.value : null;
        lower[i] = k ? k.lower : null;
        upper[i] = k ? k.upper : null;
        bad[i] = k && k.verdict === "regressed" ? k.value : null;
        good[i] = k && k.verdict === "improved" ? k.value : null;
      }
      columns.push(value, lower, upper, bad, good);
    }
    return columns;
  }

  function commitLabels(u, splits) {
    return splits.map((i) => {
      const run = Number.isInteger(i) ? view.runs[i] : undefined;
      return run ? short(run.sha).slice(0, 7) : "";
    });
  }

  function options(kpi, width) {
    const series = [{ label: view.mode === "time" ? "time" : "run" }];
    const bands = [];
    view.head.configs.forEach((config, c) => {
      const color = COLORS[c % COLORS.length];
      const show = !view.hidden.has(config);
      const base = 1 + c * PER_CONFIG;
      const marker = (stroke) => ({
        label: config, stroke, show, paths: () => null,
        points: { show: true, size: 9, width: 1, fill: stroke, stroke },
      });
      series.push(
        { label: config, stroke: color, width: 1.25, show, points: { size: 5, fill: color } },
        { label: `${config} lower`, stroke: "transparent", width: 0, show, points: { show: false } },
        { label: `${config} upper`, stroke: "transparent", width: 0, show, points: { show: false } },
        marker("#c62828"),
        marker("#1565c0"));
      bands.push({ series: [base + 2, base + 1], fill: color + "26" });
    });
    const x = view.mode === "time" ? {} : {
      values: commitLabels, space: 70,
      incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5],
    };
    return {
      width, height: HEIGHT, series, bands, legend: { show: false },
      scales: { x: { time: view.mode === "time" } },
      axes: [x, { size: 70, values: (u, splits) => splits.map(number) }],
      cursor: { drag: { x: true, y: false }, focus: { prox: 24 }, points: { size: 7 } },
      hooks: {
        setCursor: [(u) => hover(u, kpi)],
        setScale: [(u, key) => key === "x" && synced(u)],
        draw: [(u) => drawMarks(u, kpi)],
        ready: [(u) => listen(u)],
      },
    };
  }

  function hover(u, kpi) {
    const tip = u.root.parentNode.querySelector(".tip");
    const i = u.cursor.idx;
    if (i === null || i === undefined || u.cursor.left < 0 || !view.runs[i]) {
      tip.hidden = true;
      return;
    }
    const run = view.runs[i];
    view.hover = run.run_id;
    const rows = view.head.configs.filter((c) => !view.hidden.has(c) && run.configs[c]).map((c) => {
      const k = run.configs[c].kpis[kpi] || {};
      return el("tr", { class: k.verdict || "" }, el("td", {}, c), el("td", { class: "num" }, number(k.value)),
        el("td", { class: "num" }, `${number(k.lower)} … ${number(k.upper)}`), el("td", {}, k.verdict || "-"));
    });
    tip.replaceChildren(
      el("div", {}, el("b", { class: "sha", title: run.sha }, short(run.sha)), " by ", run.author || "unknown"),
      el("div", {}, day(run.finished_at), " UTC · run ", run.run_id, " · ", el("span", { class: run.verdict }, run.verdict)),
      el("table", {}, el("tr", {}, el("th", {}, "config"), el("th", {}, "value"), el("th", {}, "allowed range"),
        el("th", {}, "verdict")), rows),
      el("div", { class: "hint" }, $("pick").checked ? "click: pick for the comparison" : "click: open the run's report"));
    tip.hidden = false;
    const left = u.over.offsetLeft + u.cursor.left;
    const flip = left + 20 + tip.offsetWidth > u.root.parentNode.clientWidth;
    tip.style.left = `${flip ? left - 16 - tip.offsetWidth : left + 16}px`;
    tip.style.top = `${u.over.offsetTop + Math.max(0, u.cursor.top - 40)}px`;
  }

  let syncing = false;
  function synced(u) {
    if (syncing) return;
    syncing = true;
    const { min, max } = u.scales.x;
    view.range = [min, max];
    for (const other of view.charts) if (other !== u) other.setScale("x", { min, max });
    syncing = false;
    showRange(min, max);
  }

  function zoomTo(min, max) {
    const [low, high] = view.extent;
    const width = Math.min(max - min, high - low);
    if (!(width > 0)) return;
    min = Math.max(low, Math.min(min, high - width));
    if (view.charts.length) view.charts[0].setScale("x", { min, max: min + width });
  }

  function pan(fraction) {
    const { min, max } = view.charts[0].scales.x;
    zoomTo(min + (max - min) * fraction, max + (max - min) * fraction);
  }

  function listen(u) {
    // a click is a press and release in one place (uPlot swallows a click it takes for a drag)
    let down = null;
    u.over.addEventListener("mousedown", (e) => { down = e.button === 0 ? [e.clientX, e.clientY] : null; });
    u.over.addEventListener("mouseup", (e) => {
      const still = down !== null && Math.abs(e.clientX - down[0]) <= 3 && Math.abs(e.clientY - down[1]) <= 3;
      const run = view.runs[u.cursor.idx];
      down = null;
      if (!still || !run) return;
      if ($("pick").checked) pick(run);
      else location.href = report(run.run_id);
    });
    u.over.addEventListener("wheel", (e) => {
      e.preventDefault();
      const { min, max } = u.scales.x;
      const at = u.posToVal(e.offsetX, "x");
      const factor = e.deltaY < 0 ? 0.75 : 1 / 0.75;
      zoomTo(at - (at - min) * factor, at + (max - at) * factor);
    }, { passive: false });
  }

  /** Where a mark goes on the x axis: at its run, or between runs, or by its time. */
  function markX(mark) {
    if (view.mode === "time") return seconds(mark.at);
    const between = BETWEEN_RUNS.has(mark.kind) ? 0.5 : 0;
    if (view.index.has(mark.run_id)) return view.index.get(mark.run_id) - between;
    const t = seconds(mark.at);
    const after = view.runs.findIndex((run) => run.t >= t);
    return after <= 0 ? null : after - 0.5;
  }

  function line(u, x, color, dash, width) {
    const px = u.valToPos(x, "x", true);
    const { left, top, width: w, height } = u.bbox;
    if (!(px >= left && px <= left + w)) return;
    const ctx = u.ctx;
    ctx.save();
    ctx.strokeStyle = color;
    ctx.lineWidth = width * devicePixelRatio;
    ctx.setLineDash(dash.map((d) => d * devicePixelRatio));
    ctx.beginPath();
    ctx.moveTo(px, top);
    ctx.lineTo(px, top + height);
    ctx.stroke();
    ctx.restore();
  }

  function drawMarks(u, kpi) {
    if (view.focus !== null && view.index.has(view.focus)) {
      line(u, xOf(view.index.get(view.focus)), "rgba(240,180,0,0.55)", [], 7);
    }
    for (const mark of view.head.marks || []) {
      if ((mark.kpi && mark.kpi !== kpi) || (mark.config && view.hidden.has(mark.config))) continue;
      const x = markX(mark);
      const [color, dash] = MARKS[mark.kind] || ["#555", [1, 2]];
      if (x !== null) line(u, x, color, dash, 1.5);
    }
  }

  function visible(min, max) {
    let count = 0, first = null, last = null;
    view.runs.forEach((run, i) => {
      const x = xOf(i);
      if (x < min || x > max) return;
      count++;
      first = first || run;
      last = run;
    });
    return { count, first, last };
  }

  function showRange(min, max) {
    const { count, first, last } = visible(min, max);
    const months = `${month(view.chunks[view.first])} to ${month(view.chunks[view.last])}`;
    const range = $("range");
    range.dataset.runs = count;
    range.dataset.first = first ? first.run_id : "";
    range.dataset.last = last ? last.run_id : "";
    range.textContent = count
      ? `Showing ${count} of the ${view.runs.length} runs read (${months}): ` +
        `${short(first.sha)} ${day(first.finished_at)} to ${short(last.sha)} ${day(last.finished_at)}.`
      : `No run in this range (${months}).`;
  }

  function pick(run) {
    view.picks = [...view.picks.filter((r) => r.run_id !== run.run_id), run].slice(-2);
    const [a, b] = view.picks;
    const label = (r) => (r ? `${short(r.sha)} (${r.run_id}, ${day(r.finished_at)})` : "click a point");
    $("picks").replaceChildren(
      "Compare A: ", label(a), " with B: ", label(b), " ",
      a && b ? el("a", { id: "compare-link", href: `compare.html?${new URLSearchParams({ a: a.run_id, b: b.run_id })}` }, "compare A and B") : "");
    for (const chart of view.charts) chart.syncRect(true); // the charts may have moved down
  }

  function showFocus() {
    const i = view.index.get(view.focus);
    if (i === undefined) {
      $("focus").textContent = view.focus ? `Run ${view.focus} is not among the runs shown.` : "";
      return;
    }
    const run = view.runs[i];
    const before = view.runs[i - 1];
    $("focus").replaceChildren(
      "Run ", el("b", {}, run.run_id), " on commit ", el("code", { title: run.sha }, short(run.sha)),
      " by ", run.author || "unknown", ", finished ", day(run.finished_at), " UTC: ",
      el("span", { class: run.verdict }, run.verdict), ". ", el("a", { href: report(run.run_id) }, "its report"),
      before ? [" · ", el("a", { href: `compare.html?${new URLSearchParams({ a: before.run_id, b: run.run_id })}` },
        "compare with the run before it")] : "");
    const half = view.mode === "time" ? 3600 * 24 * 3 : 50;
    zoomTo(xOf(i) - half, xOf(i) + half);
  }

  /** A KPI's chart, drawn in its box over the range shown. */
  function chartIn(box, kpi) {
    const width = Math.max(400, $("charts").clientWidth || document.body.clientWidth);
    const chart = new uPlot(options(kpi, width), data(kpi), box);
    chart.kpi = kpi;
    view.charts.push(chart);
    const [min, max] = view.range;
    if (min !== view.extent[0] || max !== view.extent[1]) {
      syncing = true; // it joins the others' range; they need not follow it
      chart.setScale("x", { min, max });
      syncing = false;
    }
  }

  let drawing = null;
  /** The charts: those on the screen (or nearly) at once, each other as it scrolls near. */
  function draw() {
    for (const chart of view.charts) chart.destroy();
    if (drawing) drawing.disconnect();
    view.charts = [];
    const holder = $("charts");
    holder.replaceChildren();
    const n = view.runs.length;
    view.extent = n > 1 ? [xOf(0), xOf(n - 1)] : n ? [xOf(0) - 1, xOf(0) + 1] : [0, 1];
    view.range = [...view.extent];
    const boxes = view.head.kpis.map((kpi) => {
      const better = kpi.direction === "lower" ? "lower is better" : "higher is better";
      const box = el("div", { class: "chart", "data-kpi": kpi.name, style: `min-height:${HEIGHT + 36}px` },
        el("h2", {}, kpi.label || kpi.name, kpi.unit ? ` (${kpi.unit})` : "", el("span", { class: "hint" }, ` · ${better}`)),
        el("div", { class: "tip", hidden: true }));
      holder.append(box);
      return box;
    });
    const near = innerHeight + NEAR;
    drawing = new IntersectionObserver((seen) => {
      for (const entry of seen) {
        if (!entry.isIntersecting) continue;
        drawing.unobserve(entry.target);
        chartIn(entry.target, entry.target.dataset.kpi);
      }
    }, { rootMargin: `${NEAR}px 0px` });
    for (const box of boxes) {
      if (box.getBoundingClientRect().top < near) chartIn(box, box.dataset.kpi);
      else drawing.observe(box);
    }
    if (n === 1) zoomTo(...view.extent); // uPlot draws the whole data first: no second pass
    showRange(...view.extent);
    if (view.focus) showFocus();
  }

  function hide(config, hidden) {
    if (hidden) view.hidden.add(config);
    else view.hidden.delete(config);
    const c = view.head.configs.indexOf(config);
    for (const chart of view.charts) {
      chart.batch(() => {
        for (let k = 1; k <= PER_CONFIG; k++) chart.setSeries(c * PER_CONFIG + k, { show: !hidden });
      });
    }
    remember();
  }

  function remember() {
    const query = new URLSearchParams({ series: view.path, from: month(view.chunks[view.first]), to: month(view.chunks[view.last]) });
    if (view.mode !== "commits") query.set("mode", view.mode);
    if (view.hardware) query.set("hardware", view.hardware);
    if (view.hidden.size) query.set("hide", [...view.hidden].join(","));
    if (view.focus) query.set("run", view.focus);
    history.replaceState(null, "", `?${query}`);
  }

  async function months(first, last) {
    view.first = Math.max(0, first);
    view.last = Math.min(view.chunks.length - 1, last);
    $("from").value = view.first;
    $("to").value = view.last;
    await readMonths();
    gatherRuns();
    draw();
    remember();
  }

  function controls(query) {
    const head = view.head;
    for (const select of [$("from"), $("to")]) {
      select.replaceChildren(...view.chunks.map((c, i) => el("option", { value: i }, `${month(c)} (${c.points} points)`)));
    }
    $("from").value = view.first;
    $("to").value = view.last;
    $("from").onchange = () => months(Number($("from").value), Math.max(view.last, Number($("from").value)));
    $("to").onchange = () => months(Math.min(view.first, Number($("to").value)), Number($("to").value));
    $("earlier").onclick = () => months(view.first - 1, view.last);
    $("all-months").onclick = () => months(0, view.chunks.length - 1);
    $("hardware").append(...(head.hardware || []).map((h) => el("option", { value: h }, h)));
    $("hardware").value = view.hardware;
    $("hardware").onchange = () => { view.hardware = $("hardware").value; gatherRuns(); draw(); remember(); };
    $("mode").value = view.mode;
    $("mode").onchange = () => { view.mode = $("mode").value; draw(); remember(); };
    $("configs").replaceChildren("configs:", ...head.configs.map((config, c) => el("label", {},
      el("input", { type: "checkbox", name: "config", value: config, checked: !view.hidden.has(config),
        onchange: (e) => hide(config, !e.target.checked) }),
      el("span", { class: "swatch", style: `background:${COLORS[c % COLORS.length]}` }), config)));
    $("pan-left").onclick = () => pan(-0.5);
    $("pan-right").onclick = () => pan(0.5);
    $("zoom-out").onclick = () => {
      const { min, max } = view.charts[0].scales.x;
      zoomTo(min - (max - min) / 2, max + (max - min) / 2);
    };
    $("reset").onclick = () => zoomTo(...view.extent);
    document.addEventListener("keydown", (e) => {
      if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT" || !view.charts.length) return;
      if (e.key === "ArrowLeft") pan(-0.25);
      if (e.key === "ArrowRight") pan(0.25);
    });
    window.addEventListener("resize", () => {
      const width = Math.max(400, $("charts").clientWidth);
      for (const chart of view.charts) chart.setSize({ width, height: HEIGHT });
    });
  }

  function markRows() {
    const marks = [...(view.head.marks || [])].sort((a, b) => (a.at < b.at ? 1 : -1));
    $("marks").tBodies[0].replaceChildren(...marks.map((mark) => el("tr", {},
      el("td", {}, day(mark.at)), el("td", { class: `mark-${mark.kind}` }, mark.kind.replace("_", " ")),
      el("td", {}, mark.config || "all"), el("td", {}, mark.kpi || "all"),
      el("td", {}, mark.run_id ? el("a", { href: `model.html?${new URLSearchParams({ series: view.path, run: mark.run_id })}` }, short(mark.sha)) : short(mark.sha)),
      el("td", {}, mark.text || ""))));
    if (!marks.length) $("marks").tBodies[0].append(el("tr", {}, el("td", { colspan: 6 }, "No marks in this history.")));
  }

  async function main() {
    const query = params();
    view.path = await seriesPath(query);
    view.head = await load(view.path);
    const head = view.head;
    view.chunks = [...(head.chunks || [])].sort((a, b) => (a.from < b.from ? -1 : 1));
    document.title = `distkpi: ${head.model} on ${head.repo} ${head.branch}`;
    $("title").textContent = `${head.model} on ${head.repo} ${head.branch}`;
    if (!view.chunks.length) {
      say("This history has no runs yet.", "info");
      ready();
      return;
    }
    view.mode = query.get("mode") === "time" ? "time" : "commits";
    view.hardware = (head.hardware || []).includes(query.get("hardware")) ? query.get("hardware") : "";
    view.hidden = new Set((query.get("hide") || "").split(",").filter((c) => head.configs.includes(c)));
    await chooseMonths(query);
    controls(query);
    markRows();
    await readMonths();
    performance.mark("distkpi:read");
    gatherRuns();
    performance.mark("distkpi:gathered");
    draw();
    performance.mark("distkpi:drawn");
    remember();
    ready();
  }

  main().catch((error) => say(error instanceof distkpi.NotFound
    ? `${error.message}: this history has not been published here.` : String(error && error.stack || error)));
})();

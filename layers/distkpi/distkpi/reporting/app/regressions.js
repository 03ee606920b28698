"use strict";
/* regressions.html: the stored regressions (api/regressions.json), by state. */
(() => {
  const { el, load, short, day, report, say, ready } = distkpi;
  const STATES = [
    ["open", "Open"], ["acknowledged", "Acknowledged"], ["accepted", "Accepted"], ["fixed", "Fixed"],
  ];

  function row(r) {
    const point = `model.html?${new URLSearchParams({ repo: r.repo, branch: r.branch, model: r.model, run: r.run_id })}`;
    return el("tr", { class: "regression", "data-id": r.id },
      el("td", {}, `${r.repo} ${r.branch}`), el("td", {}, el("a", { href: point }, r.model)),
      el("td", {}, r.config), el("td", {}, r.kpi),
      el("td", {}, el("a", { href: report(r.run_id) }, short(r.sha))), el("td", {}, day(r.opened_at)),
      el("td", {}, r.culprit ? el("code", { title: r.culprit }, short(r.culprit)) : "not found"),
      el("td", {}, r.diagnosis || "-"), el("td", {}, r.note || ""));
  }

  function section([state, title], regressions) {
    const listed = regressions.filter((r) => r.state === state);
    return el("section", { id: state },
      el("h2", {}, `${title} (${listed.length})`),
      listed.length ? el("table", {}, el("thead", {}, el("tr", {}, ...["history", "model", "config", "KPI",
        "first regressed run", "opened", "culprit", "diagnosis", "note"].map((h) => el("th", {}, h)))),
      el("tbody", {}, listed.map(row))) : el("p", { class: "hint" }, "None."));
  }

  load("regressions.json").then((doc) => {
    const regressions = [...(doc.regressions || [])].sort((a, b) => (a.opened_at < b.opened_at ? 1 : -1));
    document.getElementById("states").replaceChildren(...STATES.map((s) => section(s, regressions)));
    say("");
    ready();
  }).catch((error) => {
    say(error instanceof distkpi.NotFound
      ? "No regressions are stored on this site (api/regressions.json is not there)." : String(error),
      error instanceof distkpi.NotFound ? "info" : "error");
    ready();
  });
})();

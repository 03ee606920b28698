"use strict";
/* The files of the API (api/), and what every page shares.

Over http(s) a file is fetched; from the file system (file://, where Chromium refuses to
fetch) its twin api/<path>.js is loaded as a script, which hands the same document to
distkpiLoaded (reporting/app_twins.py writes the twins). */
const distkpi = (() => {
  const waiting = new Map();
  const cache = new Map();

  class NotFound extends Error {
    constructor(path) {
      super(`api/${path} is not there`);
      this.path = path;
    }
  }

  window.distkpiLoaded = (path, document) => {
    const found = waiting.get(path);
    if (found) {
      waiting.delete(path);
      found.resolve(document);
    }
  };

  const encoded = (path) => path.split("/").map(encodeURIComponent).join("/");

  function viaScript(path) {
    return new Promise((resolve, reject) => {
      waiting.set(path, { resolve, reject });
      const script = document.createElement("script");
      script.src = "api/" + encoded(path.replace(/\.json$/, ".js"));
      script.onload = () => {
        script.remove();
        if (waiting.delete(path)) {
          reject(new Error(`api/${path}: its twin ${script.src} handed over no document`));
        }
      };
      script.onerror = () => {
        script.remove();
        waiting.delete(path);
        reject(new NotFound(path));
      };
      document.head.appendChild(script);
    });
  }

  async function viaFetch(path) {
    const response = await fetch("api/" + encoded(path), { cache: "no-cache" });
    // a private bucket answers 403, not 404, for a key that is not there
    if (response.status === 404 || response.status === 403) throw new NotFound(path);
    if (!response.ok) throw new Error(`api/${path}: HTTP ${response.status}`);
    return response.json();
  }

  /** The document at a path relative to api/ (each read once per page). */
  function load(path) {
    if (!cache.has(path)) {
      const reading = location.protocol === "file:" ? viaScript(path) : viaFetch(path);
      cache.set(path, reading);
      reading.catch(() => cache.delete(path));
    }
    return cache.get(path);
  }

  /** An element: el("a", {href: "x", class: "y"}, "text", child, ...) (text is never HTML). */
  function el(tag, attributes = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) {
      if (value === undefined || value === null || value === false) continue;
      if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  function number(value) {
    if (value === null || value === undefined) return "-";
    if (!Number.isFinite(value)) return String(value);
    const size = Math.abs(value);
    if (size !== 0 && (size >= 1e6 || size < 1e-3)) return value.toExponential(3);
    return Number(value.toPrecision(5)).toLocaleString("en-US", { maximumFractionDigits: 6 });
  }

  const percent = (ratio) =>
    ratio === null || ratio === undefined ? "-" : `${ratio >= 0 ? "+" : ""}${(ratio * 100).toFixed(1)}%`;
  const short = (sha) => (sha || "").slice(0, 10);
  const day = (iso) => (iso || "").replace("T", " ").slice(0, 16);
  const report = (runId) => `reports/${encodeURIComponent(runId)}/index.html`;
  const params = () => new URLSearchParams(location.search);

  function modelLink(history, extra = {}) {
    const query = new URLSearchParams({ series: history.series, ...extra });
    return `model.html?${query}`;
  }

  function say(message, kind = "error") {
    const status = document.getElementById("status");
    status.className = kind;
    status.textContent = message;
  }

  /** The page is drawn and answers input: what the tests and the speed bench wait for. */
  function ready() {
    window.distkpiReadyAt = performance.now();
    document.documentElement.dataset.ready = "true";
  }

  return { NotFound, load, el, number, percent, short, day, report, params, modelLink, say, ready };
})();

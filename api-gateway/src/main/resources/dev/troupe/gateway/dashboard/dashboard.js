// The Troupe dashboard: reads GET /v1/cluster and the training-job lists every few seconds (with
// the API key the page was given) and draws the cluster map, the replicas, the charts and the
// training runs. Plain browser JavaScript; the charts are uPlot, served by the gateway itself.
"use strict";

(function () {
  const POLL_MS = 2000;
  const HISTORY = 150; // samples kept per chart (5 minutes at the poll interval)
  const STATES = ["ready", "loading", "restarting", "draining", "failed", "unresponsive", "unplaced"];

  const $ = (id) => document.getElementById(id);
  let key = null;
  let timer = null;
  let selectedJob = null; // the job whose curve is drawn; null = the newest with gradient steps
  const samples = { t: [], throughput: new Map(), kv: new Map() }; // replica id -> values
  const charts = {};

  // ------------------------------------------------------------------ the key

  function keyFromFragment() {
    const params = new URLSearchParams(location.hash.replace(/^#/, ""));
    return params.get("key");
  }

  function start() {
    key = keyFromFragment() || sessionStorage.getItem("troupe-key");
    $("login").addEventListener("submit", (e) => {
      e.preventDefault();
      key = $("key").value.trim();
      sessionStorage.setItem("troupe-key", key);
      connect();
    });
    if (key) connect();
    else showLogin("");
  }

  function showLogin(message) {
    if (timer) clearTimeout(timer);
    timer = null;
    $("main").hidden = true;
    $("login").hidden = false;
    $("login-error").textContent = message;
    $("summary").textContent = "not connected";
  }

  function connect() {
    $("login").hidden = true;
    $("main").hidden = false;
    poll();
  }

  async function api(path) {
    const headers = key ? { Authorization: "Bearer " + key } : {};
    const r = await fetch(path, { headers, cache: "no-store" });
    if (r.status === 401) throw new Unauthorized();
    if (!r.ok) throw new Error(path + ": HTTP " + r.status);
    return r.json();
  }

  class Unauthorized extends Error {}

  // ------------------------------------------------------------------ polling

  async function poll() {
    try {
      const [cluster, jobs] = await Promise.all([
        api("/v1/cluster"),
        api("/v1/preview/training-jobs?order=desc&limit=20"),
      ]);
      render(cluster, jobs.data);
      await renderCurve(jobs.data);
      $("updated").textContent = "updated " + new Date().toLocaleTimeString();
    } catch (e) {
      if (e instanceof Unauthorized) {
        sessionStorage.removeItem("troupe-key");
        showLogin("That key was refused.");
        return;
      }
      $("updated").textContent = "update failed: " + e.message + " (retrying)";
    }
    timer = setTimeout(poll, POLL_MS);
  }

  // ------------------------------------------------------------------ rendering

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else e.setAttribute(k, v);
    }
    for (const c of children) if (c != null) e.append(c instanceof Node ? c : String(c));
    return e;
  }

  function td(value, cls) {
    return el("td", cls ? { class: cls } : {}, value);
  }

  function fixed(v, digits) {
    return v == null ? "–" : Number(v).toFixed(digits);
  }

  function since(seconds) {
    if (seconds == null) return "–";
    const s = Math.max(0, Math.round(Date.now() / 1000 - seconds));
    if (s < 120) return s + " s";
    if (s < 7200) return Math.round(s / 60) + " min";
    return Math.round(s / 3600) + " h";
  }

  function render(c, jobs) {
    const ready = c.replicas.filter((r) => r.state === "ready").length;
    $("summary").textContent =
      c.members.length + " nodes, " + ready + "/" + c.replicas.length + " replicas ready, " +
      "gateway " + c.gateway + (c.leader ? ", leader " + c.leader : "");
    $("unanswered").replaceChildren(...c.unanswered.map((u) => el("li", {}, u)));
    renderMap(c);
    renderReplicas(c.replicas);
    renderJobs(jobs);
    renderShards(c.sharding);
    renderTrajectories(c.trajectory_logs);
    sample(c.replicas);
  }

  function renderMap(c) {
    const byNode = new Map();
    for (const r of c.replicas) {
      if (!byNode.has(r.node)) byNode.set(r.node, []);
      byNode.get(r.node).push(r);
    }
    const cards = c.members.map((m) => {
      const chips = (byNode.get(m.node) || []).map((r) =>
        el("span", { class: "chip " + r.state, title: r.state + (r.reason ? ": " + r.reason : "") }, r.id));
      byNode.delete(m.node);
      const heap = m.jvm ? Math.round(m.jvm.heap_used_bytes / 2 ** 20) + " / " +
        Math.round(m.jvm.heap_max_bytes / 2 ** 20) + " MiB heap" : "";
      return el("div", { class: "node" + (m.reachable ? "" : " unreachable"), "data-node": m.node },
        el("div", { class: "address" }, m.node),
        el("div", {}, ...m.roles.map((r) => el("span", { class: "role" }, r))),
        el("div", { class: "meta" }, m.status + (m.reachable ? "" : ", unreachable") +
          (m.draining ? ", draining" : "") + ", up " + since(m.up_since) + (heap ? ", " + heap : "")),
        el("div", { class: "chips" }, ...chips));
    });
    const unplaced = byNode.get(null) || [];
    if (unplaced.length)
      cards.push(el("div", { class: "node" },
        el("div", { class: "address" }, "not placed"),
        el("div", { class: "chips" }, ...unplaced.map((r) => el("span", { class: "chip unplaced", title: r.reason }, r.id)))));
    $("map").replaceChildren(...cards);
  }

  function loadBar(r) {
    if (!r.requests) return "–";
    const w = (n) => Math.min(120, n * 12) + "px";
    return el("span", {},
      el("span", { class: "bar running", style: "width:" + w(r.requests.running) }),
      el("span", { class: "bar waiting", style: "width:" + w(r.requests.waiting) }),
      " " + r.requests.running + " / " + r.requests.waiting);
  }

  function renderReplicas(replicas) {
    $("replicas").tBodies[0].replaceChildren(...replicas.map((r) => el("tr", { "data-replica": r.id },
      td(r.id), td(r.node || "–"),
      el("td", {}, el("span", { class: "chip " + r.state, title: r.reason || "" }, r.state)),
      td(r.device ? (r.device.kind === "cuda" ? "cuda:" + r.device.index + " " + r.device.name : r.device.name) : "–"),
      el("td", {}, loadBar(r)),
      td(r.kv_cache ? fixed(100 * r.kv_cache.usage, 1) + "% of " + r.kv_cache.blocks_total : "–", "num"),
      td(r.prefix_cache ? fixed(100 * r.prefix_cache.hit_rate, 1) + "%" : "–", "num"),
      td(r.throughput ? fixed(r.throughput.prefill_tokens_per_second, 1) : "–", "num"),
      td(r.throughput ? fixed(r.throughput.decode_tokens_per_second, 1) : "–", "num"),
      td(r.adapters.map((a) => a.name).join(", ") || "–"))));
  }

  function metric(j, name, digits) {
    return fixed(j.latest_metrics[name], digits);
  }

  function renderJobs(jobs) {
    $("jobs").tBodies[0].replaceChildren(...jobs.map((j) => {
      const row = el("tr", { "data-job": j.id, class: "clickable" + (j.id === shownJob ? " selected" : "") },
        td(j.id.slice(0, 8)), td(j.model_id.slice(0, 8)),
        el("td", {}, j.status + (j.error ? ": " + j.error : "")),
        td(j.gradient_steps, "num"), td(metric(j, "loss", 4), "num"), td(metric(j, "reward", 3), "num"),
        td(metric(j, "grad_norm", 3), "num"), td(metric(j, "tokens_per_second", 0), "num"),
        td(new Date(j.created_at * 1000).toLocaleTimeString()));
      row.addEventListener("click", () => { selectedJob = j.id; renderCurve(jobs); });
      return row;
    }));
  }

  function renderShards(types) {
    const rows = [];
    for (const t of types) {
      for (const r of t.regions) rows.push(el("tr", {}, td(t.type), td(r.node), td(r.shards, "num"), td(r.entities, "num")));
      for (const u of t.unanswered) rows.push(el("tr", {}, td(t.type), td("did not answer: " + u), td("–"), td("–")));
    }
    $("shards").tBodies[0].replaceChildren(...rows);
  }

  function renderTrajectories(logs) {
    $("trajectories").tBodies[0].replaceChildren(...logs.map((l) =>
      el("tr", {}, td(l.model), td(l.split), td(l.groups, "num"), td(l.trajectories, "num"))));
  }

  // ------------------------------------------------------------------ charts

  function sample(replicas) {
    samples.t.push(Date.now() / 1000);
    const ids = replicas.map((r) => r.id);
    for (const [series, value] of [
      [samples.throughput, (r) => (r.throughput ? r.throughput.decode_tokens_per_second : null)],
      [samples.kv, (r) => (r.kv_cache ? 100 * r.kv_cache.usage : null)],
    ]) {
      for (const id of ids) if (!series.has(id)) series.set(id, new Array(samples.t.length - 1).fill(null));
      for (const [id, values] of series) {
        const r = replicas.find((x) => x.id === id);
        values.push(r ? value(r) : null);
      }
    }
    if (samples.t.length > HISTORY) {
      samples.t.shift();
      for (const series of [samples.throughput, samples.kv]) for (const v of series.values()) v.shift();
    }
    draw("chart-throughput", samples.t, samples.throughput, "tokens/s", true);
    draw("chart-kv", samples.t, samples.kv, "%", true);
  }

  const COLORS = ["#2f6fb5", "#2e8b57", "#d98200", "#7b4fb0", "#c0392b", "#16a2a2", "#8a6d3b", "#555"];

  /** (Re)draws chart `id` with x values `xs` and one line per entry of `lines` (a Map name -> ys). */
  function draw(id, xs, lines, unit, time) {
    const node = $(id);
    const names = [...lines.keys()];
    const data = [xs, ...names.map((n) => lines.get(n))];
    const shape = names.join("|") + (time ? "|t" : "|x");
    let c = charts[id];
    if (!c || c.shape !== shape) {
      if (c) c.plot.destroy();
      const opts = {
        width: Math.max(300, node.clientWidth - 2), height: 220,
        scales: { x: { time } },
        series: [{ label: time ? "time" : "step" },
          ...names.map((n, i) => ({ label: n, stroke: COLORS[i % COLORS.length], width: 1.5, points: { show: xs.length < 40 } }))],
        axes: [{}, { label: unit }],
        legend: { show: true },
      };
      c = charts[id] = { shape, plot: new uPlot(opts, data, node) };
    } else {
      c.plot.setData(data);
    }
    node.dataset.points = String(xs.length);
  }

  // ------------------------------------------------------------------ training curves

  let shownJob = null;
  let curveCache = { job: null, events: [], after: null, done: false };

  async function renderCurve(jobs) {
    const job = jobs.find((j) => j.id === selectedJob) || jobs.find((j) => j.gradient_steps > 0);
    if (!job) {
      $("curve-title").textContent = "Training curve (no job has taken a gradient step yet)";
      return;
    }
    if (curveCache.job !== job.id) curveCache = { job: job.id, events: [], after: null, done: false };
    // Events are appended only: read the ones after the last seen, until the job has ended.
    while (!curveCache.done) {
      const page = await api("/v1/preview/training-jobs/" + job.id + "/events?limit=100" +
        (curveCache.after ? "&after=" + curveCache.after : ""));
      curveCache.events.push(...page.data);
      if (page.data.length) curveCache.after = page.last_id;
      if (page.data.some((e) => e.type === "training_ended" || e.type === "training_failed")) curveCache.done = true;
      if (!page.has_more) break;
    }
    const steps = curveCache.events.filter((e) => e.type === "gradient_step");
    const xs = steps.map((e, i) => i + 1);
    const lines = new Map([
      ["loss", steps.map((e) => e.data.loss ?? null)],
      ["reward", steps.map((e) => e.data.reward ?? null)],
      ["grad norm", steps.map((e) => e.data.grad_norm ?? null)],
    ]);
    $("curve-title").textContent = "Training curve of job " + job.id.slice(0, 8) + " (" + job.status + ", per gradient step)";
    shownJob = job.id;
    for (const row of $("jobs").tBodies[0].rows) row.classList.toggle("selected", row.dataset.job === job.id);
    draw("chart-training", xs, lines, "value", false);
  }

  window.addEventListener("DOMContentLoaded", start);
})();

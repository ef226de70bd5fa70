"use strict";
// The dashboard: a home view (every table, the queue) and a view per
// table at #/table/BUCKET/NAMESPACE/TABLE, both rebuilt from the API every
// REFRESH_MS unless paused. A view is built off the page and swapped in
// whole, keeping what the reader opened and where they scrolled.

const REFRESH_MS = 15000;
const SVG = "http://www.w3.org/2000/svg";

// ui is the page's state: the job types (from the overview, in
// maintenance's order), whether this key may write, the last overview,
// and the refresh loop's switches.
const ui = {jobs: [], canWrite: false, overview: null, paused: false, busy: false, again: false, shownKey: "", msg: null};

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  setAttrs(e, attrs);
  for (const c of children) append(e, c);
  return e;
}
function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  setAttrs(e, attrs);
  for (const c of children) append(e, c);
  return e;
}
function setAttrs(e, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === "onclick") e.onclick = v; else e.setAttribute(k, v === true ? "" : v);
  }
}
function append(e, c) {
  if (c == null || c === "") return;
  if (Array.isArray(c)) { for (const x of c) append(e, x); return; }
  e.append(c instanceof Node ? c : document.createTextNode(String(c)));
}

function bytes(n) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]; let i = 0;
  while (Math.abs(n) >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}
// usd shows cents from a cent up, else two significant digits: a run's
// requests often cost a fraction of a cent, which is not nothing.
function usd(v) {
  if (!v) return "$0";
  if (Math.abs(v) >= 0.01) return "$" + v.toFixed(2);
  return "$" + v.toFixed(Math.ceil(-Math.log10(Math.abs(v))) + 1);
}
function count(n) { return n == null ? "" : Number(n).toLocaleString("en-US"); }

// ago is an instant relative to now ("3 min ago", "in 2 h").
function ago(ms) {
  const d = Date.now() - ms, a = Math.abs(d);
  let s;
  if (a < 45e3) return d >= 0 ? "just now" : "in a few seconds";
  if (a < 90 * 60e3) s = Math.round(a / 60e3) + " min";
  else if (a < 36 * 3600e3) s = Math.round(a / 3600e3) + " h";
  else s = Math.round(a / 86400e3) + " days";
  return d >= 0 ? s + " ago" : "in " + s;
}
function localTime(ms) { return new Date(ms).toLocaleString(); }
// when is a <time> that reads relatively, with the local time as its
// title; tick keeps the words current between refreshes.
function when(iso) {
  if (!iso) return "";
  const ms = Date.parse(iso);
  if (isNaN(ms) || ms <= 0) return "";
  return el("time", {datetime: new Date(ms).toISOString(), title: localTime(ms)}, ago(ms));
}
function tick() {
  for (const t of document.querySelectorAll("time[datetime]")) t.textContent = ago(Date.parse(t.getAttribute("datetime")));
}

// exact keeps integers past 2^53 (snapshot IDs) as the digits the
// server sent, where the browser gives the reviver the source text.
function exact(k, v, ctx) { return typeof v === "number" && !Number.isSafeInteger(v) && Number.isInteger(v) && ctx && ctx.source ? ctx.source : v; }
async function get(path) {
  const r = await fetch(path, {credentials: "same-origin"});
  if (!r.ok) throw new Error(path + ": " + r.status + " " + (await r.text()));
  return JSON.parse(await r.text(), exact);
}
async function post(path, body) {
  const r = await fetch(path, {method: "POST", credentials: "same-origin", headers: {"Content-Type": "application/json", "X-Icekeeper-Request": "1"}, body: body ? JSON.stringify(body) : ""});
  if (!r.ok) throw new Error(path + ": " + r.status + " " + (await r.text()));
  return r.json();
}
function base(t) { return "/icekeeper/v1/tables/" + encodeURIComponent(t.bucketARN) + "/" + encodeURIComponent(t.namespace) + "/" + encodeURIComponent(t.table); }
function tableHash(t) { return "#/table/" + [t.bucket, t.namespace, t.table].map(encodeURIComponent).join("/"); }
function tableName(t) { return t.bucket + "/" + t.namespace + "." + t.table; }

// "filesRewritten" -> "files rewritten"
function label(k) { return k.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase(); }
// "icebergUnreferencedFileRemoval" -> "Unreferenced file removal"
function jobLabel(j) { const s = label(j.replace(/^iceberg/, "")); return s.charAt(0).toUpperCase() + s.slice(1); }

// figures renders a run's figures as labelled values, leaving out what
// is zero, false or empty (most of a run's figures on most runs): sizes
// readably, nested objects one level down with their own labels, lists
// by their length and first items (every item is in the run's JSON, from
// the runs API).
function item(x) {
  if (typeof x !== "object" || x === null) return String(x);
  return Object.entries(x).filter(([, v]) => !Array.isArray(v) && typeof v !== "object" && !empty(v)).map(([k, v]) => label(k) + " " + v).join(", ");
}
function empty(v) {
  return v == null || v === "" || v === false || v === 0 || (typeof v === "string" && v.startsWith("0001-01-01")) ||
    (Array.isArray(v) && !v.length) || (typeof v === "object" && !Array.isArray(v) && Object.values(v).every(empty));
}
function figures(m) {
  const dl = el("dl", {class: "figures"});
  const add = (k, v) => {
    if (empty(v)) return;
    if (Array.isArray(v)) {
      const strings = typeof v[0] === "string", n = strings ? 3 : 1;
      dl.append(el("dt", {}, label(k)), el("dd", {}, v.length + ": " + v.slice(0, n).map(item).join(strings ? ", " : "; ") + (v.length > n ? ", …" : "")));
      return;
    }
    if (typeof v === "object") { for (const [k2, v2] of Object.entries(v)) add(k + " " + label(k2), v2); return; }
    if (typeof v === "number" && (/bytes/i.test(k) || /size$/i.test(k))) v = bytes(v);
    else if (typeof v === "number" && /usd$/i.test(k)) v = usd(v);
    else if (typeof v === "string" && /^\d{4}-\d\d-\d\dT/.test(v)) v = localTime(Date.parse(v));
    dl.append(el("dt", {}, label(k)), el("dd", {}, v));
  };
  for (const [k, v] of Object.entries(m || {})) add(k, v);
  if (!dl.childElementCount) dl.append(el("dt", {}, "figures"), el("dd", {}, "none recorded"));
  return dl;
}

function scoreClass(s) { return s >= 90 ? "good" : s >= 60 ? "fair" : "poor"; }
function scoreCell(h) {
  if (!h || !h.score) return el("td", {class: "score"});
  const s = h.score;
  return el("td", {class: "score"}, el("span", {class: "total " + scoreClass(s.total)}, s.total.toFixed(0)),
    el("div", {class: "parts"}, el("div", {}, "small files " + s.smallFiles.toFixed(0) + "/40"), el("div", {}, "equality deletes " + s.equalityDeletes.toFixed(0) + "/40"),
      el("div", {}, "position deletes " + s.positionDeletes.toFixed(0) + "/20"), h.clustering ? el("div", {}, clusteringText(h.clustering)) : ""));
}
// The clustering score stands apart from the health score (see README).
function clusteringText(c) { return "clustering " + c.score.toFixed(0) + "/100, overlap depth " + c.depth + " on " + c.columns.join(", "); }
function jobCell(j) {
  const td = el("td", {class: "job"}, el("span", {class: "status " + j.status}, j.status.replace(/_/g, " ")));
  if (j.lastRunStatus && j.lastRunStatus !== j.status) td.append(" (" + j.lastRunStatus + ")");
  if (j.lastRun) td.append(el("div", {}, "last ", when(j.lastRun)));
  if (j.nextRun) td.append(el("div", {}, "next ", when(j.nextRun)));
  if (j.failureMessage) td.append(el("div", {class: "err clamp", title: j.failureMessage}, j.failureMessage));
  const f = j.freshness;
  if (f && (f.lagSeconds > 0 || f.targetSeconds)) {
    // The lag: how old the oldest work not taken is, against the target.
    const text = "behind " + seconds(f.lagSeconds) + (f.targetSeconds ? " / target " + seconds(f.targetSeconds) : "");
    td.append(el("div", {class: "lag" + (f.late ? " err" : ""), title: [f.oldest, f.waits].filter(Boolean).join("; ")}, text));
    if (f.waits) td.append(el("div", {class: "clamp", title: f.waits}, "waits: " + f.waits));
  }
  return td;
}
// seconds is a duration in the largest unit that keeps it readable.
function seconds(s) {
  if (s < 90) return Math.round(s) + " s";
  if (s < 90 * 60) return Math.round(s / 60) + " min";
  if (s < 36 * 3600) return (s / 3600).toFixed(1) + " h";
  return (s / 86400).toFixed(1) + " days";
}

// renderHome fills the table list and the queue.
async function renderHome(o) {
  const head = el("tr", {}, el("th", {}, "table"), el("th", {}, "health"),
    ["data files", "small files", "delete files", "snapshots", "size"].map(h => el("th", {class: "num"}, h)),
    ui.jobs.map(j => el("th", {class: "job", "data-job": j, title: j}, jobLabel(j))));
  const body = el("tbody", {});
  for (const t of o.tables) {
    const h = t.health || {};
    const name = el("a", {href: tableHash(t), "data-table": t.namespace + "." + t.table}, tableName(t));
    body.append(el("tr", {}, el("td", {class: "name"}, name, t.error ? el("div", {class: "err clamp", title: t.error}, t.error) : ""), scoreCell(h),
      el("td", {class: "num"}, count(h.dataFiles)), el("td", {class: "num"}, count(h.smallFiles)), el("td", {class: "num"}, count(h.deleteFiles)),
      el("td", {class: "num"}, count(h.snapshots)), el("td", {class: "num"}, h.totalBytes == null ? "" : bytes(h.totalBytes)),
      ui.jobs.map(j => jobCell(t.jobs[j]))));
  }
  if (!o.tables.length) body.append(el("tr", {}, el("td", {colspan: 7 + ui.jobs.length}, "no tables")));
  const tables = document.getElementById("tables");
  tables.replaceChildren(el("thead", {}, head), body);
  renderDropped(o.dropped || []);
  await renderQueue();
}

// renderDropped lists the tables dropped in the last 30 days: what their
// leftovers' removal marked, and how its last run went. A dropped table's
// runs and settings are its own, never a table's created since under its
// name.
function renderDropped(dropped) {
  const b = document.querySelector("#dropped tbody");
  b.replaceChildren(...dropped.map(d => {
    const run = (d.runs || {}).icebergUnreferencedFileRemoval;
    const last = d.collectedAt ? ["nothing left, ", when(d.collectedAt)] : run ? [run.status + " ", when(run.finished)] : ["not yet"];
    return el("tr", {"data-dropped": d.tableUUID},
      el("td", {}, d.bucket + "/" + d.namespace + "." + d.name), el("td", {}, when(d.droppedAt)), el("td", {class: "uuid"}, d.tableUUID),
      el("td", {class: "num"}, count(d.noncurrent)), el("td", {class: "num"}, bytes(d.noncurrentBytes)), el("td", {}, ...last));
  }));
  if (!dropped.length) b.append(el("tr", {}, el("td", {colspan: 6}, "none")));
}

// renderQueue renders the runs queued, in the order they run, with why
// and how much each is expected to rewrite, and the rewrite budgets' use.
async function renderQueue() {
  const qb = document.querySelector("#queue tbody"), bb = document.querySelector("#budgets tbody");
  let q;
  try { q = await get("/icekeeper/v1/queue"); } catch (e) {
    qb.replaceChildren(el("tr", {}, el("td", {colspan: 7}, e.message)));
    bb.replaceChildren();
    return;
  }
  bb.replaceChildren(...q.budgets.map(b => el("tr", {},
    el("td", {}, b.scope), el("td", {}, bytes(b.rewriteBytesUsed)),
    el("td", {}, b.rewriteBytesPerHour ? bytes(b.rewriteBytesPerHour) : "unbounded"),
    el("td", {}, b.tableSharePercent ? b.tableSharePercent + "%" : ""),
    el("td", {}, b.rewritesRunning + (b.maxConcurrentRewrites ? " of " + b.maxConcurrentRewrites : "")))));
  if (!q.budgets.length) bb.append(el("tr", {}, el("td", {colspan: 5}, "no budgets")));
  qb.replaceChildren(...q.queue.map((r, i) => el("tr", {class: r.running ? "running" : ""},
    el("td", {}, r.running ? "running" : i + 1), el("td", {}, r.bucket + "/" + r.namespace + "." + r.table + (r.droppedTableUUID ? " (dropped " + r.droppedTableUUID + ")" : "")), el("td", {}, jobLabel(r.type)),
    el("td", {}, when(r.due)), el("td", {}, r.trigger), el("td", {}, r.reason),
    el("td", {}, r.estimatedBytes == null ? "" : bytes(r.estimatedBytes)))));
  if (!q.queue.length) qb.append(el("tr", {}, el("td", {colspan: 7}, "nothing queued")));
}

// The charts: one per figure of the table's health over the last 30
// days. A sample is taken when the table's metadata changes, so the line
// holds each value until the next sample (a step), and runs on to now.
// Before the daemon's first sample, the series the snapshot summaries
// carry (log: true) start from the table's own snapshot log, drawn dotted
// so that a reader can tell the summaries' totals from icekeeper's counts;
// small files and the score only the daemon knows.
const SERIES = [
  {key: "dataFiles", title: "data files", unit: "files", fmt: count, log: true},
  {key: "totalBytes", title: "total size", unit: "bytes", fmt: bytes, log: true},
  {key: "smallFiles", title: "small files", unit: "files", fmt: count},
  {key: "deleteFiles", title: "delete files", unit: "files", fmt: count, log: true},
  {key: "snapshots", title: "snapshots", unit: "snapshots", fmt: count, log: true},
  {key: "score", title: "health score", unit: "0–100", fmt: v => v.toFixed(0), max: 100},
];
const CW = 360, CH = 130, ML = 64, MR = 10, MT = 10, MB = 22;

function shortDate(ms) { return new Date(ms).toLocaleDateString(undefined, {month: "short", day: "numeric"}); }

// caption is a chart's title with its unit, and the value now.
function caption(title, unit, now) {
  return el("figcaption", {}, el("span", {}, title, el("span", {class: "unit"}, " (" + unit + ")")), el("span", {class: "now"}, now));
}

// seriesPoints is one series' points: the snapshot log's before the
// first sample (a summary without the figure gives no point), then the
// samples.
function seriesPoints(series, samples, log) {
  const pts = samples.map(s => ({t: Date.parse(s.at), v: Number(s[series.key]) || 0}));
  if (!series.log) return pts;
  const first = pts.length ? pts[0].t : Infinity;
  const fromLog = (log || []).filter(p => p[series.key] != null && Date.parse(p.at) < first)
    .map(p => ({t: Date.parse(p.at), v: Number(p[series.key]), log: true}));
  return fromLog.concat(pts);
}

function chart(series, samples, log, now) {
  const pts = seriesPoints(series, samples, log);
  const last = pts.length ? pts[pts.length - 1].v : null;
  const box = el("figure", {class: "chart"}, caption(series.title, series.unit, last == null ? "" : series.fmt(last)));
  if (pts.length < 2) {
    box.append(el("p", {class: "nodata"}, pts.length ? "one sample so far: the chart grows as the table changes" : "no samples yet"));
  }
  if (!pts.length) return box;
  // The time axis runs from the first point to now, at least an hour
  // wide so that samples moments apart still read left to right.
  const t1 = Math.max(now, pts[pts.length - 1].t), t0 = Math.min(pts[0].t, t1 - 3600e3);
  let vmax = series.max != null ? series.max : Math.max(...pts.map(p => p.v));
  if (vmax <= 0) vmax = 1;
  const x = t => ML + (t - t0) / (t1 - t0) * (CW - ML - MR);
  const y = v => MT + (1 - v / vmax) * (CH - MT - MB);
  // One path for the log's steps, one for the samples', each holding its
  // last value until the next point: the log's runs to the first sample.
  const nlog = pts.filter(p => p.log).length;
  const steps = (from, to, end) => {
    let d = "M" + x(pts[from].t).toFixed(1) + "," + y(pts[from].v).toFixed(1);
    for (let i = from + 1; i < to; i++) d += "H" + x(pts[i].t).toFixed(1) + "V" + y(pts[i].v).toFixed(1);
    return d + "H" + x(end).toFixed(1);
  };
  const g = svg("svg", {class: "plot", "data-series": series.key, viewBox: "0 0 " + CW + " " + CH, width: CW, height: CH, role: "img",
    "aria-label": series.title + " in " + series.unit + " over time"});
  g.append(svg("line", {class: "axis", x1: ML, y1: y(0), x2: CW - MR, y2: y(0)}),
    svg("line", {class: "grid", x1: ML, y1: y(vmax), x2: CW - MR, y2: y(vmax)}),
    svg("text", {class: "tick", x: ML - 4, y: y(vmax) + 4, "text-anchor": "end"}, series.fmt(vmax)),
    svg("text", {class: "tick", x: ML - 4, y: y(0) + 4, "text-anchor": "end"}, series.fmt(0)),
    svg("text", {class: "tick", x: ML, y: CH - 6, "text-anchor": "start"}, shortDate(t0)),
    svg("text", {class: "tick", x: CW - MR, y: CH - 6, "text-anchor": "end"}, "now"));
  if (nlog) g.append(svg("path", {class: "line log", d: steps(0, nlog, nlog < pts.length ? pts[nlog].t : t1)}));
  if (nlog < pts.length) g.append(svg("path", {class: "line", d: steps(nlog, pts.length, t1)}));
  for (const p of pts) {
    g.append(svg("circle", {class: "point" + (p.log ? " log" : ""), cx: x(p.t).toFixed(1), cy: y(p.v).toFixed(1), r: p.log ? 2 : 3, "data-t": p.t},
      svg("title", {}, localTime(p.t) + ": " + series.fmt(p.v) + (p.log ? " (from the snapshot log)" : ""))));
  }
  box.append(g);
  if (nlog) {
    box.append(el("p", {class: "legend"}, el("span", {class: "key log"}), "from the table's snapshot log",
      nlog < pts.length ? [el("span", {class: "key"}), "icekeeper's samples"] : ""));
  }
  return box;
}

// costChart shows what the table's runs cost per day over the window:
// icekeeper's requests as filled bars, what S3 Tables would charge for
// the same work as outlined bars beside them.
function costChart(h, now) {
  const days = h.days || 30, perDay = new Map((h.costPerDay || []).map(d => [d.day, d]));
  const slots = [];
  for (let i = days - 1; i >= 0; i--) {
    const day = new Date(now - i * 86400e3).toISOString().slice(0, 10);
    slots.push(perDay.get(day) || {day, runs: 0, usd: 0, s3TablesUSD: 0});
  }
  const vmax = Math.max(...slots.map(d => Math.max(d.usd, d.s3TablesUSD)), 0);
  const box = el("figure", {class: "chart cost"}, caption("cost per UTC day", "USD", usd(h.cost && h.cost.usd) + " in " + days + " days"));
  if (vmax <= 0) { box.append(el("p", {class: "nodata"}, "no run recorded a cost in " + days + " days")); return box; }
  const w = (CW - ML - MR) / days;
  const y = v => MT + (1 - v / vmax) * (CH - MT - MB);
  const g = svg("svg", {class: "plot", "data-series": "cost", viewBox: "0 0 " + CW + " " + CH, width: CW, height: CH, role: "img", "aria-label": "cost per day"});
  g.append(svg("line", {class: "axis", x1: ML, y1: y(0), x2: CW - MR, y2: y(0)}),
    svg("text", {class: "tick", x: ML - 4, y: y(vmax) + 4, "text-anchor": "end"}, usd(vmax)),
    svg("text", {class: "tick", x: ML - 4, y: y(0) + 4, "text-anchor": "end"}, "$0"),
    svg("text", {class: "tick", x: ML, y: CH - 6, "text-anchor": "start"}, shortDate(Date.parse(slots[0].day + "T12:00:00Z"))),
    svg("text", {class: "tick", x: CW - MR, y: CH - 6, "text-anchor": "end"}, "today"));
  slots.forEach((d, i) => {
    const x0 = ML + i * w, tip = d.day + ": " + usd(d.usd) + (d.s3TablesUSD ? ", S3 Tables would charge " + usd(d.s3TablesUSD) : "") + ", " + d.runs + " runs";
    if (d.usd > 0) g.append(svg("rect", {class: "bar", x: (x0 + 1).toFixed(1), y: y(d.usd).toFixed(1), width: Math.max(1, w / 2 - 1).toFixed(1), height: (y(0) - y(d.usd)).toFixed(1)}, svg("title", {}, tip)));
    if (d.s3TablesUSD > 0) g.append(svg("rect", {class: "bar s3", x: (x0 + w / 2).toFixed(1), y: y(d.s3TablesUSD).toFixed(1), width: Math.max(1, w / 2 - 1).toFixed(1), height: (y(0) - y(d.s3TablesUSD)).toFixed(1)}, svg("title", {}, tip)));
  });
  box.append(g, el("p", {class: "legend"}, el("span", {class: "key bar"}), "icekeeper's requests", el("span", {class: "key bar s3"}), "S3 Tables' price for the same work"));
  return box;
}

// runRow is one run: a line that says what it did, how long it took and
// what it cost (the server's summary), its figures folded behind it.
function runRow(r) {
  const detail = el("div", {class: "run-detail"},
    el("p", {}, "run " + r.id + ", " + r.trigger + ", started " + localTime(Date.parse(r.started)) + (r.finished ? ", finished " + localTime(Date.parse(r.finished)) : "")),
    r.failureMessage ? el("p", {class: "err"}, r.failureMessage) : "", figures(r.metrics));
  return el("details", {class: "run", "data-key": r.type + ":" + r.id},
    el("summary", {}, el("span", {class: "status " + r.status}, r.status), el("span", {class: "job-name"}, jobLabel(r.type)),
      el("span", {class: "line"}, r.summary || r.status), when(r.started)),
    detail);
}

// renderTable builds the view of table t, off the page.
async function renderTable(t) {
  const [runs, hist, nc] = await Promise.all([get(base(t) + "/runs?limit=10"), get(base(t) + "/history?days=30"), get(base(t) + "/noncurrent")]);
  const now = Date.now(), h = t.health || {};
  const d = el("div", {});
  if (t.error) d.append(el("p", {class: "err"}, t.error));
  const cards = el("div", {class: "cards"},
    el("div", {class: "card"}, el("div", {class: "k"}, "health"), h.score ? el("div", {class: "v " + scoreClass(h.score.total)}, h.score.total.toFixed(0)) : el("div", {class: "v"}, "?"),
      h.score ? el("div", {class: "parts"}, "small files " + h.score.smallFiles.toFixed(0) + "/40, equality deletes " + h.score.equalityDeletes.toFixed(0) + "/40, position deletes " + h.score.positionDeletes.toFixed(0) + "/20") : ""),
    h.clustering ? el("div", {class: "card"}, el("div", {class: "k"}, "clustering"), el("div", {class: "v " + scoreClass(h.clustering.score)}, h.clustering.score.toFixed(0)),
      el("div", {class: "parts"}, "overlap depth " + h.clustering.depth + " on " + h.clustering.columns.join(", ") + "; " + count(h.clustering.overlapping) + " of " + count(h.clustering.files) + " files in overlaps deeper than 2")) : "",
    // The table statistics icekeeper keeps (icebergStatistics), from the metadata.
    h.statistics ? el("div", {class: "card"}, el("div", {class: "k"}, "statistics"),
      el("div", {class: "v " + (h.statistics.commitsBehind ? "fair" : "good")}, h.statistics.commitsBehind ? count(h.statistics.commitsBehind) + " behind" : "current"),
      // Not the snapshot ID: a JSON number past 2^53 loses digits in JavaScript.
      el("div", {class: "parts"}, count(h.statistics.columns) + " column sketches, " + (h.statistics.commitsBehind ? count(h.statistics.commitsBehind) + " commits behind the current snapshot" : "of the current snapshot"))) : "",
    el("div", {class: "card"}, el("div", {class: "k"}, "data files"), el("div", {class: "v"}, count(h.dataFiles)), el("div", {class: "parts"}, count(h.smallFiles) + " small, " + count(h.deleteFiles) + " delete files")),
    el("div", {class: "card"}, el("div", {class: "k"}, "size"), el("div", {class: "v"}, h.totalBytes == null ? "" : bytes(h.totalBytes)), el("div", {class: "parts"}, count(h.snapshots) + " snapshots")));
  const c = hist.cost || {};
  cards.append(el("div", {class: "card", id: "cost"}, el("div", {class: "k"}, "cost, last " + hist.days + " days"), el("div", {class: "v"}, usd(c.usd)),
    el("div", {class: "parts"}, (c.usd ? "" : "no cost recorded in " + hist.days + " days; ") +
      (c.s3TablesUSD ? "S3 Tables would charge " + usd(c.s3TablesUSD) + "; " : "") + count(c.runs || 0) + " runs")));
  d.append(cards);

  const jobs = el("table", {id: "jobs"}, el("tr", {}, ui.jobs.map(j => el("th", {class: "job", title: j}, jobLabel(j)))), el("tr", {}, ui.jobs.map(j => jobCell(t.jobs[j]))));
  d.append(jobs);

  d.append(el("h3", {}, "over the last " + hist.days + " days"));
  const charts = el("div", {class: "charts", id: "charts"});
  for (const s of SERIES) charts.append(chart(s, hist.samples, hist.snapshotLog, now));
  charts.append(costChart(hist, now));
  d.append(charts);

  const all = [];
  for (const j of ui.jobs) for (const r of (runs.runs[j] || [])) all.push(r);
  all.sort((a, b) => Date.parse(b.started) - Date.parse(a.started) || b.id - a.id);
  d.append(el("h3", {}, "recent runs"));
  d.append(all.length ? el("div", {id: "runs"}, all.map(runRow)) : el("p", {id: "runs"}, "no runs yet"));

  d.append(el("h3", {}, "noncurrent files"));
  if (!nc.noncurrent.length) d.append(el("p", {}, "none"));
  else {
    const nt = el("table", {id: "noncurrent"}, el("tr", {}, ["path", "size", "marked", "deleted after", ""].map(x => el("th", {}, x))));
    for (const n of nc.noncurrent) {
      let act = "";
      if (ui.canWrite) {
        const what = n.protectedAt ? "release" : "restore";
        act = el("button", {type: "button", "data-path": n.path, onclick: async () => {
          try { await post(base(t) + "/" + what, {paths: [n.path]}); } catch (e) { showError(e); }
          refresh();
        }}, what);
      }
      nt.append(el("tr", {}, el("td", {class: "path"}, n.path), el("td", {}, bytes(n.size)), el("td", {}, when(n.markedAt)),
        el("td", {}, n.protectedAt ? "never: protected" : when(n.deleteAfter)), el("td", {}, act)));
    }
    d.append(nt);
  }
  return d;
}

// actions are the run buttons of table t and the line under them that
// follows a queued run; they stay across refreshes of the same table.
function renderActions(t) {
  const box = document.getElementById("actions");
  const key = tableName(t);
  if (ui.shownKey === key) return;
  ui.shownKey = key;
  box.replaceChildren(el("h2", {}, key));
  ui.msg = el("p", {id: "run-result"});
  if (!ui.canWrite) return;
  box.append(el("p", {}, "run now: ", ui.jobs.map(j => el("button", {type: "button", "data-run": j, title: j, onclick: () => trigger(t, j, ui.msg)}, "run " + jobLabel(j).toLowerCase()))), ui.msg);
}

// trigger queues a run of job j and follows it: the message under the
// buttons says queued, then the run's status and summary once it is
// recorded (polled every 2 s for up to 2 minutes).
async function trigger(t, j, msg) {
  const asked = Date.now() - 1000;
  try {
    const q = await post(base(t) + "/runs/" + j);
    msg.className = "";
    msg.textContent = j + ": " + (q.alreadyQueued ? "already queued" : "queued") + ", waiting for it to run…";
  } catch (e) { msg.className = "err"; msg.textContent = j + ": " + e.message; return; }
  for (let i = 0; i < 60; i++) {
    await new Promise(r => setTimeout(r, 2000));
    let runs;
    try { runs = await get(base(t) + "/runs?limit=1&type=" + j); } catch (e) { continue; }
    const r = (runs.runs[j] || [])[0];
    if (r && Date.parse(r.started) >= asked && r.status !== "Running") {
      msg.className = r.status;
      msg.textContent = j + ": " + r.status + (r.summary ? ": " + r.summary : "") + (r.failureMessage ? " (" + r.failureMessage + ")" : "");
      refresh();
      return;
    }
  }
  msg.textContent = j + ": still queued after 2 minutes; is a worker running?";
}

// route is the view the address asks for: home, or a table by bucket
// name, namespace and name.
function route() {
  const m = location.hash.match(/^#\/table\/([^/]+)\/([^/]+)\/([^/]+)$/);
  if (!m) return {view: "home"};
  return {view: "table", bucket: decodeURIComponent(m[1]), namespace: decodeURIComponent(m[2]), table: decodeURIComponent(m[3])};
}

function showError(e) {
  const m = document.getElementById("mode");
  m.className = "err";
  m.textContent = e.message;
}

// refresh reads the overview and rebuilds the view the address asks for.
// Refreshes do not overlap: one asked for during another runs after it.
async function refresh() {
  if (ui.busy) { ui.again = true; return; }
  ui.busy = true;
  try {
    const o = await get("/icekeeper/v1/overview");
    ui.overview = o;
    ui.canWrite = o.canWrite;
    ui.jobs = o.jobTypes;
    const mode = document.getElementById("mode");
    mode.className = "";
    mode.textContent = ui.canWrite ? "" : "Read-only: this key may not trigger runs or restore files.";
    const r = route(), home = document.getElementById("home"), tv = document.getElementById("table");
    if (r.view === "table") {
      const t = o.tables.find(x => x.bucket === r.bucket && x.namespace === r.namespace && x.table === r.table);
      if (!t) throw new Error("no table " + r.bucket + "/" + r.namespace + "." + r.table + " that this key may see");
      const view = await renderTable(t);
      renderActions(t);
      // Swap in whole: what the reader opened stays open, and the page
      // stays where they scrolled it.
      const detail = document.getElementById("detail");
      const open = new Set([...detail.querySelectorAll("details[open][data-key]")].map(x => x.dataset.key));
      for (const x of view.querySelectorAll("details[data-key]")) if (open.has(x.dataset.key)) x.open = true;
      const y = window.scrollY;
      detail.replaceChildren(view);
      home.hidden = true;
      tv.hidden = false;
      window.scrollTo(0, y);
      document.title = "icekeeper: " + tableName(t);
    } else {
      ui.shownKey = "";
      await renderHome(o);
      tv.hidden = true;
      home.hidden = false;
      document.title = "icekeeper";
    }
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    showError(e);
  } finally {
    ui.busy = false;
    if (ui.again) { ui.again = false; refresh(); }
  }
}

document.getElementById("pause").onclick = e => {
  ui.paused = !ui.paused;
  e.target.textContent = ui.paused ? "resume auto-refresh" : "pause auto-refresh";
  e.target.setAttribute("aria-pressed", ui.paused);
  if (!ui.paused) refresh();
};
window.addEventListener("hashchange", () => { window.scrollTo(0, 0); document.getElementById("detail").replaceChildren(); refresh(); });
setInterval(() => { if (!ui.paused && document.visibilityState === "visible") refresh(); }, REFRESH_MS);
setInterval(tick, 30000);
refresh();

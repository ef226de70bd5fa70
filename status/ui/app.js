"use strict";
// The job types come from the overview, in maintenance's order.
let JOBS = [];
let canWrite = false;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "onclick") e.onclick = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c == null ? "" : String(c)));
  return e;
}
function bytes(n) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"]; let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}
async function get(path) {
  const r = await fetch(path, {credentials: "same-origin"});
  if (!r.ok) throw new Error(path + ": " + r.status + " " + (await r.text()));
  return r.json();
}
async function post(path, body) {
  const r = await fetch(path, {method: "POST", credentials: "same-origin", headers: {"Content-Type": "application/json", "X-Icekeeper-Request": "1"}, body: body ? JSON.stringify(body) : ""});
  if (!r.ok) throw new Error(path + ": " + r.status + " " + (await r.text()));
  return r.json();
}
function base(t) { return "/icekeeper/v1/tables/" + encodeURIComponent(t.bucketARN) + "/" + encodeURIComponent(t.namespace) + "/" + encodeURIComponent(t.table); }

// "filesRewritten" -> "files rewritten"
function label(k) { return k.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase(); }

// figures renders a run's figures as labelled values: numbers and words
// as they are, sizes in bytes readably, nested objects one level down
// with their own labels, and lists by their length and first items (a
// list of records, such as erasure's blocked refs, by the first one's
// fields; every item is in the run's JSON, from the runs API).
function item(x) {
  if (typeof x !== "object" || x === null) return String(x);
  return Object.entries(x).filter(([, v]) => !Array.isArray(v) && typeof v !== "object").map(([k, v]) => label(k) + " " + v).join(", ");
}
function figures(m) {
  const dl = el("dl", {class: "figures"});
  const add = (k, v) => {
    if (v == null || v === "" || v === false) return;
    if (Array.isArray(v)) { if (v.length) dl.append(el("dt", {}, label(k)), el("dd", {}, v.length + ": " + v.slice(0, typeof v[0] === "string" ? 3 : 1).map(item).join(typeof v[0] === "string" ? ", " : "; ") + (v.length > (typeof v[0] === "string" ? 3 : 1) ? ", …" : ""))); return; }
    if (typeof v === "object") { for (const [k2, v2] of Object.entries(v)) add(k + " " + label(k2), v2); return; }
    if (typeof v === "number" && /bytes$/i.test(k)) v = bytes(v);
    dl.append(el("dt", {}, label(k)), el("dd", {}, v));
  };
  for (const [k, v] of Object.entries(m || {})) add(k, v);
  return dl;
}

function jobCell(j) {
  const td = el("td", {}, el("span", {class: j.status}, j.status));
  if (j.lastRunStatus && j.lastRunStatus !== j.status) td.append(" (" + j.lastRunStatus + ")");
  if (j.lastRun) td.append(el("br"), "last " + j.lastRun);
  if (j.nextRun) td.append(el("br"), "next " + j.nextRun);
  if (j.failureMessage) td.append(el("br"), el("span", {class: "err"}, j.failureMessage));
  return td;
}

async function load() {
  const o = await get("/icekeeper/v1/overview");
  canWrite = o.canWrite;
  JOBS = o.jobTypes;
  document.getElementById("mode").textContent = canWrite ? "" : "Read-only: this key may not trigger runs or restore files.";
  const head = document.querySelector("#tables thead tr");
  head.querySelectorAll("th.job").forEach(th => th.remove());
  for (const j of JOBS) head.append(el("th", {class: "job"}, j));
  const body = document.querySelector("#tables tbody");
  body.replaceChildren();
  for (const t of o.tables) {
    const h = t.health || {};
    const name = el("a", {onclick: () => detail(t), "data-table": t.namespace + "." + t.table}, t.bucket + "/" + t.namespace + "." + t.table);
    const row = el("tr", {}, el("td", {}, name, t.error ? el("div", {class: "err"}, t.error) : ""),
      el("td", {class: "score"}, h.score ? h.score.total.toFixed(0) : "",
        h.score ? el("div", {class: "parts"}, "small files " + h.score.smallFiles.toFixed(0) + "/40, equality deletes " + h.score.equalityDeletes.toFixed(0) + "/40, position deletes " + h.score.positionDeletes.toFixed(0) + "/20") : ""),
      el("td", {}, h.dataFiles), el("td", {}, h.smallFiles), el("td", {}, h.deleteFiles), el("td", {}, h.snapshots), el("td", {}, h.totalBytes == null ? "" : bytes(h.totalBytes)));
    for (const j of JOBS) row.append(jobCell(t.jobs[j]));
    body.append(row);
  }
  if (!o.tables.length) body.append(el("tr", {}, el("td", {colspan: 7 + JOBS.length}, "no tables")));
}

// trigger queues a run of job j and follows it: the message under the
// buttons says queued, then the run's status and failure once it is
// recorded (polled every 2 s for up to 2 minutes).
async function trigger(t, j, msg) {
  const asked = new Date(Date.now() - 1000).toISOString();
  try {
    const q = await post(base(t) + "/runs/" + j);
    msg.className = "";
    msg.textContent = j + ": " + (q.alreadyQueued ? "already queued" : "queued") + ", waiting for it to run…";
  } catch (e) { msg.className = "err"; msg.textContent = j + ": " + e.message; return; }
  for (let i = 0; i < 60; i++) {
    await new Promise(r => setTimeout(r, 2000));
    const runs = await get(base(t) + "/runs?limit=1");
    const r = (runs.runs[j] || [])[0];
    if (r && r.started >= asked && r.status !== "Running") {
      msg.className = r.status;
      msg.textContent = j + ": " + r.status + (r.failureMessage ? ": " + r.failureMessage : "");
      await detail(t, msg);
      load();
      return;
    }
  }
  msg.textContent = j + ": still queued after 2 minutes; is a worker running?";
}

async function detail(t, keep) {
  const d = document.getElementById("detail");
  d.replaceChildren(el("h2", {}, t.bucket + "/" + t.namespace + "." + t.table));
  const msg = keep || el("p", {id: "run-result"});
  if (canWrite) {
    const bar = el("p", {});
    for (const j of JOBS) bar.append(el("button", {"data-run": j, onclick: () => trigger(t, j, msg)}, "run " + j));
    d.append(bar, msg);
  }
  const runs = await get(base(t) + "/runs?limit=10");
  const rt = el("table", {id: "runs"}, el("tr", {}, el("th", {}, "job"), el("th", {}, "status"), el("th", {}, "started"), el("th", {}, "trigger"), el("th", {}, "figures")));
  for (const j of JOBS) for (const r of (runs.runs[j] || [])) {
    rt.append(el("tr", {}, el("td", {}, j), el("td", {class: r.status}, r.status, r.failureMessage ? el("div", {class: "err"}, r.failureMessage) : ""),
      el("td", {}, r.started), el("td", {}, r.trigger), el("td", {}, figures(r.metrics))));
  }
  d.append(el("h2", {}, "recent runs"), rt);
  const nc = await get(base(t) + "/noncurrent");
  const nt = el("table", {id: "noncurrent"}, el("tr", {}, el("th", {}, "path"), el("th", {}, "size"), el("th", {}, "marked"), el("th", {}, "deleted after"), el("th", {}, "")));
  for (const n of nc.noncurrent) {
    let act = "";
    if (canWrite) {
      const what = n.protectedAt ? "release" : "restore";
      act = el("button", {"data-path": n.path, onclick: async () => { await post(base(t) + "/" + what, {paths: [n.path]}); await detail(t); }}, what);
    }
    nt.append(el("tr", {}, el("td", {}, n.path), el("td", {}, bytes(n.size)), el("td", {}, n.markedAt), el("td", {}, n.protectedAt ? "never: protected" : n.deleteAfter), el("td", {}, act)));
  }
  d.append(el("h2", {}, "noncurrent files"), nc.noncurrent.length ? nt : el("p", {}, "none"));
}

// queue renders the runs queued, in the order they run, with why and how
// much each is expected to rewrite, and the rewrite budgets' use.
async function queue() {
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
    el("td", {}, r.running ? "running" : i + 1), el("td", {}, r.bucket + "/" + r.namespace + "." + r.table), el("td", {}, r.type),
    el("td", {}, r.due), el("td", {}, r.trigger), el("td", {}, r.reason),
    el("td", {}, r.estimatedBytes == null ? "" : bytes(r.estimatedBytes)))));
  if (!q.queue.length) qb.append(el("tr", {}, el("td", {colspan: 7}, "nothing queued")));
}

load().catch(e => { document.getElementById("mode").textContent = e.message; console.error(e); });
queue().catch(e => console.error(e));

"use strict";
const JOBS = ["icebergCompaction", "icebergSnapshotManagement", "icebergUnreferencedFileRemoval"];
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

function jobCell(j) {
  const td = el("td", {}, el("span", {class: j.status}, j.status));
  if (j.lastRun) td.append(el("br"), "last " + j.lastRun);
  if (j.nextRun) td.append(el("br"), "next " + j.nextRun);
  if (j.failureMessage) td.append(el("br"), el("span", {class: "err"}, j.failureMessage));
  return td;
}

async function load() {
  const o = await get("/icekeeper/v1/overview");
  canWrite = o.canWrite;
  document.getElementById("mode").textContent = canWrite ? "" : "Read-only: this key may not trigger runs or restore files.";
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
  if (!o.tables.length) body.append(el("tr", {}, el("td", {colspan: 10}, "no tables")));
}

async function detail(t) {
  const d = document.getElementById("detail");
  d.replaceChildren(el("h2", {}, t.bucket + "/" + t.namespace + "." + t.table));
  if (canWrite) {
    for (const j of JOBS) d.append(el("button", {onclick: async () => { await post(base(t) + "/runs/" + j); await detail(t); }}, "run " + j));
  }
  const runs = await get(base(t) + "/runs?limit=10");
  const rt = el("table", {id: "runs"}, el("tr", {}, el("th", {}, "job"), el("th", {}, "status"), el("th", {}, "started"), el("th", {}, "trigger"), el("th", {}, "figures")));
  for (const j of JOBS) for (const r of (runs.runs[j] || [])) {
    rt.append(el("tr", {}, el("td", {}, j), el("td", {class: r.status}, r.status, r.failureMessage ? el("div", {class: "err"}, r.failureMessage) : ""),
      el("td", {}, r.started), el("td", {}, r.trigger), el("td", {}, el("pre", {}, JSON.stringify(r.metrics, null, 1)))));
  }
  d.append(el("h2", {}, "recent runs"), rt);
  const nc = await get(base(t) + "/noncurrent");
  const nt = el("table", {id: "noncurrent"}, el("tr", {}, el("th", {}, "path"), el("th", {}, "size"), el("th", {}, "marked"), el("th", {}, "deleted after"), el("th", {}, "")));
  for (const n of nc.noncurrent) {
    const act = canWrite && !n.protectedAt ? el("button", {onclick: async () => { await post(base(t) + "/restore", {paths: [n.path]}); await detail(t); }}, "restore") : "";
    nt.append(el("tr", {}, el("td", {}, n.path), el("td", {}, bytes(n.size)), el("td", {}, n.markedAt), el("td", {}, n.protectedAt ? "never: protected" : n.deleteAfter), el("td", {}, act)));
  }
  d.append(el("h2", {}, "noncurrent files"), nc.noncurrent.length ? nt : el("p", {}, "none"));
}

load().catch(e => { document.getElementById("mode").textContent = e.message; console.error(e); });

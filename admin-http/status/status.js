// kadmit's status page: reads the admin API's JSON (/v1/admission with the ledger's health,
// /v1/brokers with its budgets, /v1/policy, /v1/decisions) every few seconds and redraws.
// No external fetches.
"use strict";

const REFRESH_MS = 2000;
const UNLIMITED = 2147483647;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "style") e.style.cssText = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function limitText(n) {
  return n >= UNLIMITED ? "unlimited" : String(n);
}

// A bar of count and reserved against limit; warn within 10% of the limit.
function bar(count, reserved, limit) {
  const cap = limit >= UNLIMITED ? Math.max(count + reserved, 1) : Math.max(limit, 1);
  const used = Math.min(100, (100 * count) / cap);
  const res = Math.min(100 - used, (100 * reserved) / cap);
  const fill = (count + reserved) / cap;
  const cls = limit >= UNLIMITED ? "bar" : fill >= 1 ? "bar full" : fill >= 0.9 ? "bar warn" : "bar";
  return el("div", { class: cls, title: `${count} + ${reserved} reserved of ${limitText(limit)}` },
    el("div", { class: "used", style: `width:${used}%` }),
    el("div", { class: "reserved", style: `left:${used}%;width:${res}%` }));
}

function num(v, field) {
  return el("td", { class: "num", "data-field": field }, v);
}

function drawBrokers(doc) {
  const body = document.querySelector("#brokers tbody");
  body.replaceChildren(...doc.brokers.map((b) => el("tr", { "data-broker": b.id },
    el("td", {}, b.id, b.listed ? "" : " (not registered)", b.fenced ? " (fenced)" : ""),
    el("td", {}, b.rack ?? "-"),
    el("td", {}, bar(b.partitions, b.reserved, b.limit)),
    num(b.partitions, "partitions"),
    num(b.reserved, "reserved"),
    el("td", { class: "num", "data-field": "limit", title: `from ${b.limit_source}` },
      limitText(b.limit)),
    num(b.headroom, "headroom"))));
  const c = doc.cluster;
  document.getElementById("cluster").replaceChildren(
    bar(c.partitions, c.reserved_partitions, c["max.partitions"]),
    el("p", {},
      el("span", { "data-field": "cluster-partitions" }, c.partitions), " partitions (",
      el("span", { "data-field": "cluster-reserved" }, c.reserved_partitions), " reserved) of ",
      el("code", {}, "max.partitions"), " ",
      el("span", { "data-field": "cluster-max" }, limitText(c["max.partitions"])),
      `; ${c.topics} topics; view ${Math.round((c.view_age_ms || 0) / 100) / 10} s old`));
}

// One row per tenant budget: a topic rule's (by its match) or a principal's.
function drawBudgets(doc) {
  const b = doc.budgets || { rules: [], principals: [] };
  const rows = [
    ...b.rules.map((r) => ["rule", r.rule, r]),
    ...b.principals.map((p) => ["principal", p.principal, p])];
  const body = document.querySelector("#budgets tbody");
  body.replaceChildren(...(rows.length ? rows.map(([kind, name, r]) =>
    el("tr", { "data-budget": `${kind}:${name}` },
      el("td", {}, `${kind} `, el("code", {}, name)),
      el("td", {}, bar(r.used, 0, r.budget)),
      num(r.used, "used"),
      num(r.budget, "budget"))) :
    [el("tr", {}, el("td", { colspan: 4, class: "muted" }, "the policy sets no budget"))]));
}

function drawPolicy(doc) {
  document.getElementById("policy-version").textContent = `version ${doc.version}`;
  const rows = [];
  const limits = doc.limits || {};
  for (const [key, value] of Object.entries(doc.policy)) {
    if (key === "brokers") continue;
    const from = limits[key] && limits[key].from ? limits[key].from : "";
    rows.push(el("tr", { "data-key": key }, el("td", {}, el("code", {}, key)),
      el("td", {}, typeof value === "number" ? limitText(value) : String(value)),
      el("td", {}, from)));
  }
  for (const [id, o] of Object.entries(doc.policy.brokers || {})) {
    const from = (limits.brokers && limits.brokers[id] && limits.brokers[id].from) || "";
    rows.push(el("tr", { "data-key": `brokers.${id}` },
      el("td", {}, el("code", {}, `brokers.${id}.max.broker.partitions`)),
      el("td", {}, limitText(o["max.broker.partitions"])), el("td", {}, from)));
  }
  document.querySelector("#policy tbody").replaceChildren(...rows);
  const r = doc.last_reload;
  const reload = document.getElementById("reload");
  if (!r) reload.replaceChildren("no reload since start");
  else if (r.ok) reload.replaceChildren(el("span", { class: "ok" }, "ok"), ` at ${r.at}`);
  else reload.replaceChildren(el("span", { class: "bad" }, "failed"), ` at ${r.at}: ${r.error}`);
}

function drawDecisions(doc) {
  document.querySelector("#decisions tbody").replaceChildren(...doc.decisions.map((d) =>
    el("tr", { "data-decision": d.decision },
      el("td", {}, d.at.replace("T", " ").replace("Z", "")),
      el("td", {}, d.api),
      el("td", { class: `decision-${d.decision}` }, d.decision + (d.audit ? " (audit)" : "")),
      el("td", {}, d.reason),
      el("td", {}, d.message ?? ""))));
}

// /v1/admission answers 503 with a body while admission is unhealthy: both are drawn.
async function getAdmission() {
  const r = await fetch("/v1/admission", { cache: "no-store" });
  return r.json();
}

function lastError(part) {
  return part.last_error ? `; last error ${part.last_error} at ${part.last_error_at}` : "";
}

function drawAdmission(doc) {
  const p = document.getElementById("admission");
  p.dataset.state = doc.status || "unhealthy";
  p.className = doc.status === "unhealthy" || doc.error ? "error" : "";
  p.textContent = doc.error ? doc.error : `admission ${doc.status}`;
  const table = document.getElementById("ledger");
  const l = doc.ledger;
  table.hidden = !l;
  if (!l) return;
  const c = l.consumer, pr = l.producer;
  const rows = [
    ["ledger", l.usable ? "usable" : `unusable: ${l.why ?? ""}`],
    ["ledger consumer", `${c.lag_records} records behind` +
      (c.lag_ms ? ` for ${c.lag_ms} ms` : "") + (c.error ? ", in error" : "") + lastError(c)],
    ["ledger producer", (pr.fatal ? "fatal error, being recreated" : pr.error ? "appends fail" :
      "delivering") + `; recreated ${pr.recreated_total} times` + lastError(pr)],
    ["ledger topic", l.topic.state],
    ["limits topic", l.limits_topic.state],
  ];
  table.querySelector("tbody").replaceChildren(...rows.map(([k, v]) =>
    el("tr", {}, el("td", {}, k), el("td", {}, v))));
}

async function getJSON(path) {
  const r = await fetch(path, { cache: "no-store" });
  const doc = await r.json();
  if (!r.ok) throw new Error(`${path}: ${doc.error || r.status}`);
  return doc;
}

async function refresh() {
  const err = document.getElementById("error");
  try {
    const [admission, brokers, policy, decisions] = await Promise.all(
      [getAdmission(), getJSON("/v1/brokers"), getJSON("/v1/policy"), getJSON("/v1/decisions")]);
    drawAdmission(admission);
    drawBrokers(brokers);
    drawBudgets(brokers);
    drawPolicy(policy);
    drawDecisions(decisions);
    err.hidden = true;
    const up = document.getElementById("updated");
    up.textContent = `updated ${new Date().toLocaleTimeString()}`;
    up.dataset.policyVersion = brokers.policy_version;
    document.body.dataset.ready = "1";
  } catch (e) {
    err.textContent = String(e.message || e);
    err.hidden = false;
  }
}

refresh();
setInterval(refresh, REFRESH_MS);

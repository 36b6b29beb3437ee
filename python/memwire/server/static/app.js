// memwire's memory page. Plain JS, no framework, no build step, nothing from another origin.
// Every text from the store goes in through textContent (the CSP's Trusted Types refuse HTML
// strings anyway): memories are written by agents and may hold anything.
"use strict";

const PAGE = 50;
const TOKEN_KEY = "memwire.token"; // sessionStorage only: gone when the tab closes

const $ = (id) => document.getElementById(id);

const state = {
  token: sessionStorage.getItem(TOKEN_KEY),
  overview: null,
  bank: null,
  count: 0,
  view: "memories",
  offset: 0,
  memoryId: null,
  config: null,
};

// -- talking to the server ---------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(method, path, body) {
  const headers = {};
  if (state.token) headers.Authorization = "Bearer " + state.token;
  const init = { method, headers, credentials: "omit", cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 401) {
    askForToken(state.token ? "The server refused this token." : "");
    throw new ApiError(401, "a bearer token is required");
  }
  const kind = response.headers.get("content-type") || "";
  const data = kind.includes("application/json") ? await response.json() : await response.text();
  if (!response.ok) {
    const message = data && data.error ? data.error : "HTTP " + response.status;
    throw new ApiError(response.status, message);
  }
  return data;
}

const enc = encodeURIComponent;
const bankPath = (bank) => "/banks/" + enc(bank);
const uiBankPath = (bank) => "/ui/api/banks/" + enc(bank);

// -- small DOM helpers -------------------------------------------------------------------------

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

function show(node, visible) {
  node.hidden = !visible;
}

function status(message) {
  $("status").textContent = message || "";
  show($("status"), Boolean(message));
}

function fail(error) {
  if (error instanceof ApiError && error.status === 401) return;
  status(error.message || String(error));
}

function shortDate(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toISOString().slice(0, 16).replace("T", " ");
}

function tagList(tags) {
  const span = el("span", { class: "tags" });
  for (const tag of tags || []) span.append(el("span", { class: "tag", text: tag }));
  return span;
}

function excerpt(text, n) {
  return text.length > n ? text.slice(0, n - 1) + "\u2026" : text;
}

// -- the token ---------------------------------------------------------------------------------

function askForToken(message) {
  show($("app"), false);
  show($("login"), true);
  $("login-error").textContent = message || "";
  show($("login-error"), Boolean(message));
  $("token").focus();
}

$("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  state.token = $("token").value.trim();
  $("token").value = "";
  sessionStorage.setItem(TOKEN_KEY, state.token);
  start();
});

$("signout").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = null;
  askForToken("");
});

// -- navigation: the hash holds bank, view, offset and memory ----------------------------------

function hashFor(changes) {
  const next = { bank: state.bank, view: state.view, offset: state.offset, memory: null };
  Object.assign(next, changes);
  const params = new URLSearchParams();
  if (next.bank != null) params.set("bank", next.bank);
  if (next.view) params.set("view", next.view);
  if (next.offset) params.set("offset", String(next.offset));
  if (next.memory) params.set("memory", next.memory);
  return "#" + params.toString();
}

function go(changes) {
  const hash = hashFor(changes);
  if (location.hash === hash) route();
  else location.hash = hash;
}

function route() {
  if (!state.overview) return;
  const params = new URLSearchParams(location.hash.slice(1));
  const bank = params.get("bank");
  state.view = params.get("view") || "memories";
  state.offset = Math.max(0, parseInt(params.get("offset") || "0", 10) || 0);
  state.memoryId = params.get("memory");
  status("");
  if (bank == null) {
    state.bank = null;
    show($("bank"), false);
    show($("welcome"), true);
    markBank();
    return;
  }
  if (state.bank !== bank) $("notice").textContent = "";
  state.bank = bank;
  show($("welcome"), false);
  show($("bank"), true);
  markBank();
  const info = state.overview.banks.find((b) => b.bank === bank);
  state.count = info ? info.count : 0;
  $("bank-name").textContent = bank;
  $("bank-count").textContent = state.count.toLocaleString("en") + " memories";
  for (const tab of document.querySelectorAll(".tabs button")) {
    tab.classList.toggle("current", tab.dataset.view === state.view);
  }
  for (const view of document.querySelectorAll(".view")) show(view, false);
  const views = { memories: showMemories, search: showSearch, insights: showInsights,
    config: showConfig, trash: showTrash, memory: showMemory };
  (views[state.view] || showMemories)().catch(fail);
}

window.addEventListener("hashchange", route);
$("home").addEventListener("click", (event) => {
  event.preventDefault();
  go({ bank: null, view: null, offset: 0 });
});
for (const tab of document.querySelectorAll(".tabs button")) {
  tab.addEventListener("click", () => go({ view: tab.dataset.view, offset: 0 }));
}

// -- banks -------------------------------------------------------------------------------------

async function loadOverview() {
  state.overview = await api("GET", "/ui/api/overview");
  const o = state.overview;
  $("version").textContent = "v" + o.version + " \u00b7 " + o.backend + " kernel";
  if (o.fallback) {
    $("fallback").textContent =
      "Running the pure-Python fallback kernel (slower, same results)" +
      (o.reason ? ": " + o.reason : "");
  }
  show($("fallback"), o.fallback);
  const list = $("bank-list");
  list.replaceChildren();
  for (const b of o.banks) {
    const link = el("a", { href: "#bank=" + enc(b.bank), "data-bank": b.bank },
      el("span", { class: "name", text: b.bank }),
      el("span", { class: "count", text: b.count.toLocaleString("en") }));
    list.append(el("li", null, link));
  }
  show($("no-banks"), o.banks.length === 0);
}

function markBank() {
  for (const link of document.querySelectorAll("#bank-list a")) {
    link.classList.toggle("current", link.dataset.bank === state.bank);
  }
}

// -- memories, newest first --------------------------------------------------------------------

async function showMemories() {
  show($("view-memories"), true);
  const offset = state.offset;
  const rows = await api("GET", `${bankPath(state.bank)}/memories?limit=${PAGE}&offset=${offset}`);
  const body = $("memory-rows");
  body.replaceChildren();
  for (const m of rows) {
    const row = el("tr", { "data-id": m.id },
      el("td", { class: "date", text: shortDate(m.created_at), title: m.created_at }),
      el("td", { class: "content" },
        // A real link, so the keyboard and "open in a new tab" reach the memory too.
        el("a", { href: hashFor({ view: "memory", memory: m.id }), text: excerpt(m.content, 240) })),
      el("td", null, tagList(m.tags)),
      el("td", { class: "context", text: m.context ? excerpt(m.context, 120) : "" }));
    row.addEventListener("click", (event) => {
      if (!event.target.closest("a")) go({ view: "memory", memory: m.id });
    });
    body.append(row);
  }
  const last = offset + rows.length;
  $("page-info").textContent = rows.length
    ? `${(offset + 1).toLocaleString("en")}\u2013${last.toLocaleString("en")} of ${state.count.toLocaleString("en")}`
    : "no memories here";
  $("prev").disabled = offset === 0;
  $("next").disabled = last >= state.count || rows.length < PAGE;
  performance.mark("memwire:memories-shown"); // benchmarks/ui_load.py reads the first one
}

$("prev").addEventListener("click", () => go({ offset: Math.max(0, state.offset - PAGE) }));
$("next").addEventListener("click", () => go({ offset: state.offset + PAGE }));

// -- asking before anything that cannot be undone (or that a person should mean) -------------

let confirmed = null; // what the confirmation's OK runs

function ask(message, quote, label, action) {
  $("confirm-message").textContent = message;
  $("confirm-text").textContent = quote || "";
  show($("confirm-text"), Boolean(quote));
  $("confirm-ok").textContent = label;
  confirmed = action;
  $("confirm").showModal();
}

$("confirm-cancel").addEventListener("click", () => {
  confirmed = null;
  $("confirm").close();
});
$("confirm-ok").addEventListener("click", async () => {
  const action = confirmed;
  confirmed = null;
  $("confirm").close();
  if (!action) return;
  try {
    await action();
    status("");
  } catch (error) {
    fail(error);
  }
});

function statusBadge(value) {
  const name = value || "live";
  return el("span", { class: "status " + name, "data-status": name, text: name });
}

function splitTags(text) {
  return text.split(",").map((t) => t.trim()).filter(Boolean);
}

// -- one memory: its detail, tags, history; trash, restore, purge ------------------------------

async function showMemory() {
  show($("view-memory"), true);
  const base = `${bankPath(state.bank)}/memories/${enc(state.memoryId)}`;
  const m = await api("GET", base);
  const detail = $("memory-detail");
  detail.replaceChildren();
  const fields = [
    ["id", m.id], ["bank", m.bank], ["created", m.created_at], ["retained", m.retained_at],
    ["document", m.document_id || "\u2014"], ["context", m.context || "\u2014"],
  ];
  for (const [name, value] of fields) detail.append(el("dt", { text: name }), el("dd", { text: value }));
  detail.append(el("dt", { text: "status" }), el("dd", { id: "memory-status" }, statusBadge(m.status),
    m.archived_at ? " since " + shortDate(m.archived_at) : "",
    m.superseded_by ? el("span", null, " by ",
      el("a", { href: hashFor({ view: "memory", memory: m.superseded_by }), text: m.superseded_by }))
      : null));
  detail.append(el("dt", { text: "tags" }), el("dd", { id: "memory-tags" }, tagList(m.tags)));
  detail.append(el("dt", { text: "content" }), el("dd", { class: "content", text: m.content }));
  const live = (m.status || "live") === "live";
  // Only a live memory is edited; a superseded one is history, a trashed one is restored first.
  show($("tags-form"), live);
  $("tags-edit").value = (m.tags || []).join(", ");
  $("tags-info").textContent = "";
  show($("forget"), live);
  show($("restore"), m.status === "trashed");
  show($("purge"), true);
  for (const button of ["forget", "restore", "purge"]) $(button).dataset.id = m.id;
  $("forget").dataset.content = m.content;
  const versions = (await api("GET", `${base}/history`)).versions;
  $("history-info").textContent = versions.length === 1
    ? "one version: it was never updated"
    : `${versions.length} versions, oldest first`;
  const list = $("history");
  list.replaceChildren();
  for (const v of versions) {
    const item = el("li", { "data-id": v.id, class: v.id === m.id ? "current" : "" },
      el("div", null, statusBadge(v.status), " ",
        el("a", { href: hashFor({ view: "memory", memory: v.id }), text: v.id }), " ",
        el("span", { class: "muted", text: "created " + shortDate(v.created_at) +
          (v.archived_at ? " \u00b7 until " + shortDate(v.archived_at) : "") }), " ",
        tagList(v.tags)),
      el("div", { class: "content", text: excerpt(v.content, 400) }));
    list.append(item);
  }
}

$("back").addEventListener("click", (event) => {
  event.preventDefault();
  history.back();
});

$("tags-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const id = $("forget").dataset.id;
  $("tags-info").textContent = "saving\u2026";
  try {
    const m = await api("PATCH", `${bankPath(state.bank)}/memories/${enc(id)}`,
      { tags: splitTags($("tags-edit").value) });
    $("memory-tags").replaceChildren(tagList(m.tags));
    $("tags-edit").value = m.tags.join(", ");
    $("tags-info").textContent = "saved";
  } catch (error) {
    $("tags-info").textContent = error.message;
  }
});

$("forget").addEventListener("click", () => {
  const id = $("forget").dataset.id;
  ask("Move this memory to the trash? It leaves recall now; you can restore it from the " +
    "Trash tab until the bank's trash_days pass (30 by default), then it is deleted.",
  excerpt($("forget").dataset.content || "", 200), "Move to trash", async () => {
    const result = await api("DELETE", `${bankPath(state.bank)}/memories/${enc(id)}`);
    await loadOverview();
    go({ view: "memories", offset: 0 });
    $("notice").textContent = result.trashed
      ? "moved to the trash: restore it from the Trash tab"
      : "deleted (this bank keeps no trash)";
  });
});

async function restore(id) {
  await api("POST", `${bankPath(state.bank)}/trash/${enc(id)}/restore`);
  await loadOverview();
  $("notice").textContent = "restored " + id;
}

$("restore").addEventListener("click", async () => {
  try {
    await restore($("restore").dataset.id);
    route();
  } catch (error) {
    fail(error);
  }
});

function askPurge(id, content, after) {
  ask("Purge this memory for good? It is deleted from the store, from its history and from " +
    "the bank's snapshot. This cannot be undone.", excerpt(content || "", 200), "Purge",
  async () => {
    await api("POST", `${bankPath(state.bank)}/memories/${enc(id)}/purge`);
    await loadOverview();
    $("notice").textContent = "purged " + id;
    after();
  });
}

$("purge").addEventListener("click", () => {
  askPurge($("purge").dataset.id, $("forget").dataset.content,
    () => go({ view: "trash", offset: 0 }));
});

// -- the trash: the last trashed first ---------------------------------------------------------

async function showTrash() {
  show($("view-trash"), true);
  const offset = state.offset;
  const rows = await api("GET", `${bankPath(state.bank)}/trash?limit=${PAGE}&offset=${offset}`);
  const body = $("trash-rows");
  body.replaceChildren();
  for (const m of rows) {
    const restoreButton = el("button", { type: "button", class: "restore", text: "Restore" });
    restoreButton.addEventListener("click", async () => {
      try {
        await restore(m.id);
        route();
      } catch (error) {
        fail(error);
      }
    });
    const purgeButton = el("button", { type: "button", class: "purge danger", text: "Purge" });
    purgeButton.addEventListener("click", () => askPurge(m.id, m.content, route));
    body.append(el("tr", { "data-id": m.id },
      el("td", { class: "date", text: shortDate(m.archived_at), title: m.archived_at || "" }),
      el("td", { class: "content" },
        el("a", { href: hashFor({ view: "memory", memory: m.id }), text: excerpt(m.content, 240) })),
      el("td", null, tagList(m.tags)),
      el("td", { class: "actions-cell" }, restoreButton, purgeButton)));
  }
  $("trash-info").textContent = rows.length
    ? `${(offset + 1).toLocaleString("en")}\u2013${(offset + rows.length).toLocaleString("en")} in the trash`
    : offset ? "nothing more in the trash" : "the trash is empty";
  $("trash-prev").disabled = offset === 0;
  $("trash-next").disabled = rows.length < PAGE;
  $("trash-empty").disabled = rows.length === 0 && offset === 0;
  // Counts the renderings, so a reader (a test) knows a fresh one arrived.
  body.dataset.shown = String(Number(body.dataset.shown || 0) + 1);
}

$("trash-prev").addEventListener("click", () => go({ offset: Math.max(0, state.offset - PAGE) }));
$("trash-next").addEventListener("click", () => go({ offset: state.offset + PAGE }));
$("trash-empty").addEventListener("click", () => {
  ask("Empty the trash? Every trashed memory of this bank is deleted for good. This cannot be " +
    "undone.", "", "Empty trash", async () => {
    const result = await api("POST", `${bankPath(state.bank)}/trash/empty`, {});
    await loadOverview();
    $("notice").textContent = `deleted ${result.purged} trashed memories for good`;
    go({ view: "trash", offset: 0 });
  });
});

// -- search: the recall agents get, with each hit's score and stream ranks ---------------------

function showSearch() {
  show($("view-search"), true);
  $("query").focus();
  return Promise.resolve();
}

function rankBadge(name, rank) {
  return el("span", { class: rank ? "rank" : "rank absent", "data-stream": name,
    text: `${name} ${rank ? "#" + rank : "\u2013"}` });
}

$("search-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const body = { query: $("query").value, limit: Number($("limit").value) || 10 };
  const floor = $("min-score").value.trim();
  if (floor !== "") body.min_score = Number(floor);
  const tags = splitTags($("search-tags").value);
  if (tags.length) body.tags = tags;
  try {
    const result = await api("POST", `${uiBankPath(state.bank)}/recall`, body);
    renderHits(result);
    status("");
  } catch (error) {
    fail(error);
  }
});

function renderHits(result) {
  const floor = result.floor ? result.floor : null;
  $("search-info").textContent =
    `${result.hits.length} hit${result.hits.length === 1 ? "" : "s"}` +
    (floor != null
      ? `; relevance floor ${floor} (from ${result.floor_source})`
      : "; no relevance floor");
  const list = $("hits");
  list.replaceChildren();
  // Counts the answers shown, so a reader (a test, a screen reader) knows a new one arrived.
  list.dataset.answers = String(Number(list.dataset.answers || 0) + 1);
  for (const h of result.hits) {
    // A hit below the floor was kept by the dense rescue (docs/dense.md, "The relevance floor").
    const why = floor == null
      ? "no floor: ranked by fused score"
      : h.score >= floor
        ? `score ${h.score.toFixed(5)} \u2265 floor ${floor}`
        : `score ${h.score.toFixed(5)} < floor ${floor}: kept because its meaning stands out ` +
          "from the other nearest neighbours (dense rescue)";
    const item = el("li", { "data-id": h.id },
      el("div", null,
        el("span", { class: "score", text: h.score.toFixed(5) }), " ",
        el("span", { class: "ranks" }, rankBadge("bm25", h.bm25_rank),
          rankBadge("overlap", h.overlap_rank), rankBadge("dense", h.dense_rank)), " ",
        el("span", { class: "muted", text: shortDate(h.created_at) }), " ", tagList(h.tags)),
      el("div", { class: "content", text: h.content }),
      el("div", { class: "why", text: why }));
    item.addEventListener("click", () => go({ view: "memory", memory: h.id }));
    list.append(item);
  }
}

// -- insights: small SVG plots -----------------------------------------------------------------

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  if (text != null) node.textContent = text;
  return node;
}

function dayPlot(days) {
  // One bar per calendar day from the first to the last, empty days included.
  const counts = new Map(days);
  const series = [];
  if (days.length) {
    const first = new Date(days[0][0] + "T00:00:00Z");
    const last = new Date(days[days.length - 1][0] + "T00:00:00Z");
    for (let d = first; d <= last; d = new Date(d.getTime() + 86400000)) {
      const key = d.toISOString().slice(0, 10);
      series.push([key, counts.get(key) || 0]);
    }
  }
  const W = 860, H = 180, left = 36, bottom = 22;
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "memories per day" });
  const max = Math.max(1, ...series.map((s) => s[1]));
  const step = series.length ? (W - left) / series.length : 0;
  root.append(svg("line", { class: "axis", x1: left, y1: H - bottom, x2: W, y2: H - bottom }));
  root.append(svg("text", { x: 0, y: 12 }, String(max)));
  root.append(svg("text", { x: 0, y: H - bottom }, "0"));
  series.forEach(([day, n], i) => {
    const h = ((H - bottom - 16) * n) / max;
    const bar = svg("rect", { class: "bar", x: left + i * step, y: H - bottom - h,
      width: Math.max(1, step - 1), height: h });
    bar.append(svg("title", null, `${day}: ${n}`));
    root.append(bar);
  });
  if (series.length) {
    root.append(svg("text", { x: left, y: H - 6 }, series[0][0]));
    root.append(svg("text", { x: W, y: H - 6, "text-anchor": "end" }, series[series.length - 1][0]));
  }
  return root;
}

function tagPlot(tags) {
  const top = tags.slice(0, 20);
  const W = 860, row = 20, left = 160;
  const H = Math.max(row, top.length * row) + 4;
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "tag counts" });
  const max = Math.max(1, ...top.map((t) => t[1]));
  top.forEach(([tag, n], i) => {
    const y = i * row + 2;
    root.append(svg("text", { x: left - 6, y: y + 13, "text-anchor": "end" }, excerpt(tag, 24)));
    const w = ((W - left - 60) * n) / max;
    const bar = svg("rect", { class: "bar tagbar", x: left, y, width: Math.max(1, w), height: row - 4 });
    bar.append(svg("title", null, `${tag}: ${n}`));
    root.append(bar);
    root.append(svg("text", { x: left + w + 6, y: y + 13 }, String(n)));
  });
  if (!top.length) root.append(svg("text", { x: 0, y: 14 }, "no tags"));
  return root;
}

async function showInsights() {
  show($("view-insights"), true);
  const data = await api("GET", `${uiBankPath(state.bank)}/days`);
  $("days-info").textContent = data.counted < data.count
    ? `the newest ${data.counted.toLocaleString("en")} of ${data.count.toLocaleString("en")} memories, by UTC day of created_at`
    : `${data.count.toLocaleString("en")} memories, by UTC day of created_at`;
  $("days-plot").replaceChildren(dayPlot(data.days));
  $("tags-plot").replaceChildren(tagPlot(data.tags));
}

// -- config ------------------------------------------------------------------------------------

async function showConfig() {
  show($("view-config"), true);
  state.config = await api("GET", `${bankPath(state.bank)}/config`);
  $("config-text").value = JSON.stringify(state.config, null, 2);
  $("config-info").textContent = "";
}

$("config-save").addEventListener("click", async () => {
  let edited;
  try {
    edited = JSON.parse($("config-text").value);
  } catch (error) {
    $("config-info").textContent = "not JSON: " + error.message;
    return;
  }
  if (!edited || typeof edited !== "object" || Array.isArray(edited)) {
    $("config-info").textContent = "the config must be a JSON object";
    return;
  }
  // PUT merges; a key deleted in the editor is sent as null, which removes it.
  $("config-info").textContent = "saving\u2026";
  const body = { ...edited };
  for (const key of Object.keys(state.config || {})) if (!(key in edited)) body[key] = null;
  try {
    state.config = await api("PUT", `${bankPath(state.bank)}/config`, body);
    $("config-text").value = JSON.stringify(state.config, null, 2);
    $("config-info").textContent = "saved";
  } catch (error) {
    $("config-info").textContent = error.message;
  }
});

// -- export / import ---------------------------------------------------------------------------

$("export").addEventListener("click", async () => {
  try {
    const text = await api("GET", `${uiBankPath(state.bank)}/export`);
    const url = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
    const link = el("a", { href: url, download: `memwire-${state.bank.replace(/[^\w.-]/g, "_")}.jsonl` });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  } catch (error) {
    fail(error);
  }
});

$("import-file").addEventListener("change", async (event) => {
  const file = event.target.files[0];
  event.target.value = "";
  if (!file) return;
  try {
    const data = await file.text();
    const result = await api("POST", `${uiBankPath(state.bank)}/import`, { data });
    await loadOverview();
    go({ view: "memories", offset: 0 });
    status("");
    $("notice").textContent = `imported ${result.imported} from ${file.name}`;
  } catch (error) {
    fail(error);
  }
});

// -- start -------------------------------------------------------------------------------------

async function start() {
  try {
    await loadOverview();
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) {
      show($("login"), false);
      show($("app"), true);
      fail(error);
    }
    return;
  }
  show($("login"), false);
  show($("app"), true);
  show($("signout"), Boolean(state.token));
  route();
}

start();

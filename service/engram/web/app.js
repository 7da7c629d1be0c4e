// engram memory browser: plain DOM, no framework, no CDN. Every piece of text from the server is
// set with textContent, never parsed as HTML. The API key lives in session storage and travels
// only as a bearer header.

const tenant = decodeURIComponent(location.pathname.split("/")[2] || "");
const storageKey = `engram-key:${tenant}`;
const $ = (selector) => document.querySelector(selector);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "on") for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

const when = (iso) => (iso ? new Date(iso).toLocaleString() : "");
const score = (x) => (x === undefined || x === null ? "" : Number(x).toFixed(3));

class ApiError extends Error {}

async function api(path, { method = "GET", body } = {}) {
  const key = sessionStorage.getItem(storageKey);
  const response = await fetch(`/t/${encodeURIComponent(tenant)}/v1${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 401 || response.status === 403) {
    logout("That key does not open this tenant.");
    throw new ApiError("unauthorised");
  }
  if (!response.ok) {
    const detail = await response.json().catch(() => ({}));
    throw new ApiError(detail.error?.message || `${response.status} ${response.statusText}`);
  }
  return response.status === 204 ? null : response.json();
}

function fail(error) {
  if (!(error instanceof ApiError) || error.message !== "unauthorised") alert(error.message);
}

// -- login ---------------------------------------------------------------------------------

function logout(message = "") {
  sessionStorage.removeItem(storageKey);
  for (const view of document.querySelectorAll("main > section")) view.hidden = view.id !== "login-view";
  $("#nav").hidden = true;
  $("#login-error").textContent = message;
}

async function login(event) {
  event.preventDefault();
  sessionStorage.setItem(storageKey, $("#key").value.trim());
  $("#key").value = "";
  try {
    await api("/stats");
  } catch {
    return; // api() has logged out with the reason
  }
  $("#login-error").textContent = "";
  $("#nav").hidden = false;
  show(location.hash.slice(1) || "memories");
}

function show(view) {
  if (!sessionStorage.getItem(storageKey)) return logout();
  for (const section of document.querySelectorAll("main > section")) section.hidden = section.id !== `${view}-view`;
  for (const link of document.querySelectorAll("#nav a")) link.classList.toggle("current", link.dataset.view === view);
  if (view === "memories") loadMemories();
}

// -- memories ------------------------------------------------------------------------------

let cursor = null;

function filterQuery() {
  const form = new FormData($("#filters"));
  const params = new URLSearchParams();
  for (const [name, value] of form.entries()) {
    if (!value) continue;
    params.append(name, name.endsWith("_after") || name.endsWith("_before") ? new Date(value).toISOString() : value);
  }
  return params;
}

async function loadCounts() {
  const counts = await api("/stats");
  const chips = [
    ...Object.entries(counts.by_type).map(([k, v]) => `${k} ${v}`),
    ...Object.entries(counts.by_layer).map(([k, v]) => `${k} ${v}`),
    ...Object.entries(counts.by_status).filter(([k]) => k !== "active").map(([k, v]) => `${k} ${v}`),
  ];
  $("#counts").replaceChildren(...chips.map((text) => el("span", { class: "count" }, text)));
}

async function loadMemories(more = false) {
  try {
    if (!more) {
      cursor = null;
      $("#memory-table tbody").replaceChildren();
      loadCounts().catch(fail);
    }
    const params = filterQuery();
    params.set("limit", "50");
    if (cursor) params.set("cursor", cursor);
    const page = await api(`/memories?${params}`);
    const rows = page.items.map((m) =>
      el(
        "tr",
        { "data-id": m.id, on: { click: () => openMemory(m.id) } },
        el("td", {}, m.content),
        el("td", {}, m.type),
        el("td", {}, m.layer),
        el("td", { class: `status-${m.status}` }, m.status),
        el("td", {}, when(m.created_at)),
        el("td", {}, when(m.occurred_at)),
        el("td", { class: "num" }, m.access_count),
      ),
    );
    $("#memory-table tbody").append(...rows);
    cursor = page.next_cursor;
    $("#more").hidden = !cursor;
    $("#empty").hidden = $("#memory-table tbody").children.length > 0;
  } catch (error) {
    fail(error);
  }
}

async function openMemory(id) {
  try {
    const [memory, history, versions] = await Promise.all([
      api(`/memories/${id}`),
      api(`/memories/${id}/history`),
      api(`/memories/${id}/versions`),
    ]);
    for (const row of document.querySelectorAll("#memory-table tr")) row.classList.toggle("selected", row.dataset.id === id);
    renderDetail(memory, history, versions);
  } catch (error) {
    fail(error);
  }
}

function renderDetail(m, history, versions) {
  const content = el("textarea", { id: "edit-content" }, m.content);
  const type = el("select", { id: "edit-type" }, ...["fact", "preference", "event", "task"].map((t) => el("option", { selected: t === m.type }, t)));
  const importance = el("input", { id: "edit-importance", type: "number", min: 0, max: 1, step: 0.05, value: m.importance });
  const tags = el("input", { id: "edit-tags", value: m.tags.join(", ") });
  const act = (label, fn, attrs = {}) => el("button", { type: "button", ...attrs, on: { click: fn } }, label);
  const after = async (work) => {
    try {
      const changed = await work();
      await loadMemories();
      if (changed !== false) await openMemory(m.id);
    } catch (error) {
      fail(error);
    }
  };
  const save = () =>
    after(() =>
      api(`/memories/${m.id}`, {
        method: "PATCH",
        body: {
          content: content.value,
          type: type.value,
          importance: Number(importance.value),
          tags: tags.value.split(",").map((t) => t.trim()).filter(Boolean),
        },
      }),
    );
  const forget = () => confirm("Forget this memory? It can be restored until it is purged.") && after(() => api(`/memories/${m.id}/forget`, { method: "POST", body: {} }));
  const restore = () => after(() => api(`/memories/${m.id}/restore`, { method: "POST" }));
  const purge = () =>
    confirm("Purge this memory for good? Its content is erased from the history too. This cannot be undone.") &&
    after(async () => {
      await api(`/memories/${m.id}`, { method: "DELETE" });
      $("#detail").hidden = true;
      return false;
    });
  const chain = versions.length > 1
    ? el("div", {}, el("h3", {}, "Versions"), el("ol", { id: "versions" }, ...versions.map((v) =>
        el("li", { class: `status-${v.status}` }, el("a", { href: "#memories", on: { click: () => openMemory(v.id) } }, v.content), ` (${v.status})`))))
    : null;
  $("#detail").replaceChildren(
    ...[
    el("h2", {}, "Memory"),
    el("p", { class: "hint" }, `${m.id} · ${m.status} · ${m.language} · used ${m.access_count} times`),
    content,
    el("div", { class: "row" }, el("label", {}, "Type ", type), el("label", {}, "Importance ", importance)),
    el("div", { class: "row" }, el("label", {}, "Tags ", tags)),
    el(
      "div",
      { class: "row" },
      act("Save", save, { id: "save" }),
      m.status === "active" ? act("Forget", forget, { id: "forget", class: "danger" }) : null,
      m.status === "forgotten" ? act("Restore", restore, { id: "restore" }) : null,
      m.status === "forgotten" ? act("Purge", purge, { id: "purge", class: "danger" }) : null,
    ),
    chain,
    el("h3", {}, "History"),
    el("ul", { class: "timeline", id: "history" }, ...history.map((e) =>
      el("li", { "data-event": e.event }, el("div", { class: "when" }, `${when(e.at)} · ${e.event}${e.actor ? ` · ${e.actor}` : ""}`), e.content ?? ""))),
    ].filter(Boolean), // the versions block is absent for a memory that never changed
  );
  $("#detail").hidden = false;
}

// -- search and explain --------------------------------------------------------------------

async function search(event) {
  event.preventDefault();
  const form = new FormData($("#search-form"));
  const body = { query: form.get("query"), top_k: Number(form.get("top_k") || 5), explain: true };
  if (form.get("now")) body.now = new Date(form.get("now")).toISOString();
  try {
    renderSearch(await api("/search", { method: "POST", body }));
  } catch (error) {
    fail(error);
  }
}

function renderSearch(result) {
  const e = result.explanation;
  const snippet = (id) => e.snippets[id] ?? id;
  const hits = result.hits.map((h) =>
    el("div", { class: "hit" }, el("span", { class: "score" }, score(h.score), " "), h.memory.content,
      el("div", { class: "hint" }, `vector ${score(h.channels.vector)} · keyword ${score(h.channels.keyword)} · rule ${score(h.channels.rule)} · context ${score(h.channels.context)}`)));
  const channel = (name, label) =>
    el("div", { class: "channel", "data-channel": name }, el("h3", {}, `${label} (${e.candidates[name]?.length ?? 0})`),
      el("ol", {}, ...(e.candidates[name] ?? []).map((c) => el("li", {}, el("span", { class: "score" }, score(c.score), " "), snippet(c.id)))));
  const facts = [
    `searched: "${e.searched_text}"`,
    e.rewritten ? `rewritten by the LLM in ${e.rewrite_ms} ms` : null,
    e.time_window ? `time: "${e.time_window.phrase}" = ${when(e.time_window.start)} – ${when(e.time_window.end)}` : null,
    e.prefer_recent ? "latest first" : null,
    `weights: vector ${e.weights.vector}, keyword ${e.weights.keyword}, rule ${e.weights.rule}`,
    `tokens: ${Object.entries(e.token_idf).map(([t, w]) => `${t} (${w.toFixed(2)})`).join(", ") || "none"}`,
    e.query_identifiers.length ? `identifiers: ${e.query_identifiers.join(", ")}` : null,
  ].filter(Boolean);
  const fused = el("table", { id: "fused" },
    el("thead", {}, el("tr", {}, ...["#", "Memory", "Fused", "Vector", "Keyword", "Rule", "Context"].map((h) => el("th", {}, h)))),
    el("tbody", {}, ...e.fused.slice(0, 30).map((f, i) =>
      el("tr", {}, el("td", { class: "num" }, i + 1), el("td", {}, snippet(f.id)), el("td", { class: "num" }, score(f.score)),
        el("td", { class: "num" }, score(f.channels.vector)), el("td", { class: "num" }, score(f.channels.keyword)),
        el("td", { class: "num" }, score(f.channels.rule)), el("td", { class: "num" }, score(f.channels.context))))));
  $("#search-results").replaceChildren(
    el("h2", {}, `Hits (${result.hits.length})`),
    el("div", { id: "hits" }, ...hits),
    el("h2", {}, "Why: every channel's candidates"),
    el("ul", { class: "hint" }, ...facts.map((f) => el("li", {}, f))),
    el("div", { class: "channels" }, channel("vector", "Vector"), channel("keyword", "Keyword"), channel("rule", "Rule"), channel("time", "Time"), channel("context", "Context")),
    el("h2", {}, "Fused ranking"),
    fused,
  );
}

// -- forgetting preview --------------------------------------------------------------------

async function previewForgetting() {
  try {
    const report = await api("/forgetting/run?dry_run=true", { method: "POST" });
    const rows = report.candidates.map((c) =>
      el("tr", {}, el("td", {}, c.memory.content), el("td", { class: "num" }, score(c.score)), el("td", {}, c.reason), el("td", {}, c.forget ? "forget" : "keep")));
    $("#forgetting-results").replaceChildren(
      el("p", {}, `${report.candidates.length} candidates, ${report.expired.length} expired session/task memories, ${report.purged.length} to purge.`),
      el("table", { id: "forgetting-table" },
        el("thead", {}, el("tr", {}, el("th", {}, "Memory"), el("th", { class: "num" }, "Decay score"), el("th", {}, "Why"), el("th", {}, "Judge"))),
        el("tbody", {}, ...rows)),
    );
  } catch (error) {
    fail(error);
  }
}

// -- wiring --------------------------------------------------------------------------------

$("#tenant").textContent = `· ${tenant}`;
$("#login-form").addEventListener("submit", login);
$("#logout").addEventListener("click", () => logout());
$("#filters").addEventListener("submit", (event) => (event.preventDefault(), loadMemories()));
$("#more").addEventListener("click", () => loadMemories(true));
$("#search-form").addEventListener("submit", search);
$("#preview").addEventListener("click", previewForgetting);
window.addEventListener("hashchange", () => show(location.hash.slice(1) || "memories"));
if (sessionStorage.getItem(storageKey)) {
  $("#nav").hidden = false;
  show(location.hash.slice(1) || "memories");
} else {
  logout();
}

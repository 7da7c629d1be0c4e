// The memory list: counts, a timeline to pick a period, a text filter and the other filters,
// bulk actions on the selected rows, and one memory's detail (edit, pin, forget, its versions
// drawn as a chain, its history). All of it within the user picked (users.js).

import { api, ApiError, tenant } from "./api.js";
import { legend, responsive, timelineChart, TYPES } from "./charts.js";
import { $, $$, bar, dateOf, el, fill, label, notify, plural, when } from "./dom.js";
import { countsCaption, pickUser, scopeParams, scopeUser, statsPath } from "./users.js";

let cursor = null;
let loads = 0; // a list asked for again (another filter, another user) drops the older answers
let openId = null;
const selected = new Set();
const period = { after: null, before: null }; // picked on the timeline

export function fail(error) {
  if (!(error instanceof ApiError) || error.message !== "unauthorised") notify(error.message);
}

function filterQuery() {
  const params = new URLSearchParams();
  for (const [name, value] of new FormData($("#filters")).entries()) {
    if (!value) continue;
    const isDate = name.endsWith("_after") || name.endsWith("_before");
    params.append(name, isDate ? new Date(value).toISOString() : value.trim());
  }
  if (period.after) params.set("occurred_after", period.after);
  if (period.before) params.set("occurred_before", period.before);
  return scopeParams(params);
}

// -- counts and timeline -------------------------------------------------------------------

// The second vector channel: how far its vectors are behind the writes (memories are found meanwhile).
function channelCaption(channel) {
  if (!channel) return "";
  if (!channel.enabled) return "second vectors: off";
  if (!channel.pending) return "second vectors: up to date";
  const wait = channel.lag_seconds < 90 ? `${Math.round(channel.lag_seconds)} s` : `${Math.round(channel.lag_seconds / 60)} min`;
  return `second vectors: ${plural(channel.pending, "memory", "memories")} waiting (oldest ${wait})`;
}

async function loadCounts(asked) {
  const [counts, channel] = await Promise.all([api(statsPath()), api("/retrieval").catch(() => null)]);
  if (asked !== loads) return;
  const active = counts.by_status.active ?? 0;
  const stat = (value, text, attrs = {}) => el("button", { type: "button", class: "stat", ...attrs }, el("strong", {}, value), el("span", {}, text));
  const byType = TYPES.map((t) =>
    stat(counts.by_type[t] ?? 0, `${label(t)}${(counts.by_type[t] ?? 0) === 1 ? "" : "s"}`, {
      "data-type": t, class: `stat type-stat type-${t}`, title: `Show active ${t}s`,
      on: { click: () => pickFilter({ type: t, status: "active" }) },
    }));
  const layers = Object.entries(counts.by_layer).map(([layer, n]) => `${label(layer)} ${n}`).join(" · ");
  fill($("#counts"),
    stat(active, "active", { "data-status": "active", on: { click: () => pickFilter({ status: "active", type: "" }) } }),
    ...byType,
    stat(counts.by_status.superseded ?? 0, "superseded", { "data-status": "superseded", on: { click: () => pickFilter({ status: "superseded", type: "" }) } }),
    stat(counts.by_status.forgotten ?? 0, "forgotten", { "data-status": "forgotten", on: { click: () => pickFilter({ status: "forgotten", type: "" }) } }),
    el("p", { class: "hint layers" }, el("span", { title: "Active memories by layer" }, `Layers: ${layers}`), " · ",
      el("span", { id: "counts-scope" }, countsCaption()),
      channel ? " · " : "",
      el("span", { id: "retrieval-lag", title: "The retrieval model's vectors, made in the background after each write" }, channelCaption(channel))),
  );
}

function pickFilter(values) {
  for (const [name, value] of Object.entries(values)) $(`#filters [name=${name}]`).value = value;
  loadMemories();
}

async function loadTimeline(asked) {
  const params = filterQuery();
  params.delete("occurred_after");
  params.delete("occurred_before");
  const timeline = await api(`/memories/timeline?${params}`);
  if (asked !== loads) return;
  const container = $("#timeline");
  fill($("#timeline-legend"), ...legend());
  if (!timeline.points.length) {
    container.__observer?.disconnect();
    container.replaceChildren(el("p", { class: "empty" }, "Nothing to draw yet."));
    $("#timeline-caption").textContent = "";
    return;
  }
  const tallest = Math.max(...timeline.points.map((p) => Object.values(p.counts).reduce((a, b) => a + b, 0)));
  $("#timeline-caption").textContent = `${plural(timeline.total, "memory", "memories")} by ${timeline.bucket} of when they happened ` +
    `(at most ${tallest} a ${timeline.bucket}) · pick a bar to list that ${timeline.bucket}`;
  responsive(container, (width) => timelineChart(timeline, pickPeriod, width));
  markPeriod();
}

function pickPeriod(point) {
  period.after = point.start;
  period.before = point.end;
  $("#timeline-clear").textContent = `${dateOf(point.start)} – ${dateOf(new Date(Date.parse(point.end) - 1).toISOString())} ×`;
  $("#timeline-clear").hidden = false;
  loadMemories({ keepTimeline: true });
}

function clearPeriod() {
  period.after = period.before = null;
  $("#timeline-clear").hidden = true;
  loadMemories({ keepTimeline: true });
}

function markPeriod() {
  for (const bar of $$("#timeline .timeline-bar")) bar.classList.toggle("picked", bar.dataset.start === period.after);
}

// -- the list ------------------------------------------------------------------------------

// Whose memory it is (a user's, as a link to pick that user, or the tenant's shared one), and
// the agent that wrote it.
export function owner(m, tag = "td") {
  const pick = (e) => {
    e.stopPropagation();
    pickUser(m.user_id);
  };
  return el(tag, { class: "owner", "data-label": "User" },
    m.user_id
      ? el("button", { type: "button", class: "user-link", "data-user": m.user_id, title: `Show ${m.user_id}'s memories`, on: { click: pick } }, m.user_id)
      : el("span", { class: "shared", title: "The tenant's own memory, of no user: every user's agent reads it" }, "shared"),
    m.agent_id ? el("span", { class: "agent", title: "the agent that wrote it" }, `agent ${m.agent_id}`) : null);
}

function row(m) {
  const check = el("input", {
    type: "checkbox", class: "pick-one", "aria-label": "Select", checked: selected.has(m.id),
    on: { click: (e) => e.stopPropagation(), change: (e) => select(m.id, e.target.checked) },
  });
  return el("tr", { "data-id": m.id, class: m.id === openId ? "selected" : null, on: { click: () => openMemory(m.id) } },
    el("td", { class: "pick" }, check),
    el("td", { class: "content" }, m.pinned ? el("span", { class: "badge pinned", title: "Pinned: never forgotten by the schedule" }, "pinned") : null, m.content,
      m.tags.length ? el("span", { class: "tags" }, ...m.tags.map((t) => el("span", { class: "tag" }, t))) : null),
    owner(m),
    el("td", { "data-label": "Type" }, el("span", { class: `badge type-${m.type}` }, m.type)),
    el("td", { "data-label": "Layer" }, label(m.layer)),
    el("td", { "data-label": "Status" }, el("span", { class: `status status-${m.status}` }, m.status)),
    m.occurred_at
      ? el("td", { "data-label": "Happened", title: `stored ${when(m.created_at)}` }, dateOf(m.occurred_at))
      : el("td", { "data-label": "Happened", class: "inferred", title: "when it happened is unknown: this is when it was stored" }, dateOf(m.created_at)),
    el("td", { class: "num", "data-label": "Uses" }, m.access_count));
}

export async function loadMemories({ more = false, keepTimeline = false } = {}) {
  const asked = more ? loads : ++loads;
  try {
    if (!more) {
      cursor = null;
      selected.clear();
      updateBulk();
      fill($("#memory-table tbody"));
      loadCounts(asked).catch(fail);
      if (!keepTimeline) loadTimeline(asked).catch(fail);
      else markPeriod();
    }
    const params = filterQuery();
    params.set("limit", "50");
    if (cursor) params.set("cursor", cursor);
    const page = await api(`/memories?${params}`);
    if (asked !== loads) return;
    $("#memory-table tbody").append(...page.items.map(row));
    cursor = page.next_cursor;
    $("#more").hidden = !cursor;
    const none = $("#memory-table tbody").children.length === 0;
    $("#empty").hidden = !none;
    if (none) fill($("#empty"), ...(filtered() ? noMatch() : nothingYet()));
    // What the filters no longer show is not left open beside them (a superseded one, say).
    if (!more && openId && !page.items.some((m) => m.id === openId)) closeDetail();
  } catch (error) {
    fail(error);
  }
}

// Any filter beyond the default view (active memories, any time, of the user picked).
function filtered() {
  const given = [...new FormData($("#filters")).entries()].filter(([name, value]) => value && !(name === "status" && value === "active"));
  return given.length > 0 || period.after !== null;
}

function noMatch() {
  const clear = () => {
    $("#filters").reset();
    period.after = period.before = null;
    $("#timeline-clear").hidden = true;
    loadMemories();
  };
  return [el("p", {}, "No memories match these filters."), el("button", { type: "button", id: "clear-filters", on: { click: clear } }, "Clear the filters")];
}

// An empty tenant: how memories get here (an agent over MCP, or the form above); never the key itself.
function nothingYet() {
  const url = `${location.origin}/t/${encodeURIComponent(tenant)}/mcp`;
  const snippet = `claude mcp add --transport http engram ${url} --header "Authorization: Bearer <your key>"`;
  return [
    el("p", {}, el("strong", {}, scopeUser() ? `No memories of ${scopeUser()} yet.` : "No memories yet."),
      " Add one above, or connect an agent: it remembers through MCP."),
    el("dl", { class: "times" },
      el("dt", {}, "MCP URL"), el("dd", {}, el("code", { id: "mcp-url" }, url)),
      el("dt", {}, "Header"), el("dd", {}, el("code", {}, "Authorization: Bearer <the key you logged in with>"))),
    el("p", { class: "hint" }, "For example, Claude Code:"),
    el("pre", { class: "snippet" }, el("code", { id: "mcp-snippet" }, snippet)),
  ];
}

async function addMemory(event) {
  event.preventDefault();
  const form = event.target;
  const content = form.elements.content;
  content.removeAttribute("aria-invalid");
  const body = { content: content.value, type: form.elements.type.value };
  if (scopeUser()) body.user_id = scopeUser(); // written for the user shown
  try {
    const written = await api("/memories", { method: "POST", body });
    notify(written.outcome === "created" ? "Added." : `Already known (${written.outcome}): ${written.memory.content}`, "ok");
    form.reset();
    await loadMemories();
  } catch (error) {
    if (error instanceof ApiError && error.field === "content") content.setAttribute("aria-invalid", "true");
    fail(error);
  }
}

// -- bulk actions --------------------------------------------------------------------------

function select(id, on) {
  if (on) selected.add(id);
  else selected.delete(id);
  updateBulk();
}

function updateBulk() {
  $("#bulk").hidden = selected.size === 0;
  $("#bulk-count").textContent = `${plural(selected.size, "memory", "memories")} selected`;
  const boxes = $$("#memory-table tbody .pick-one");
  $("#select-all").checked = boxes.length > 0 && boxes.every((b) => b.checked);
}

function selectAll(on) {
  for (const tr of $$("#memory-table tbody tr")) {
    $(".pick-one", tr).checked = on;
    select(tr.dataset.id, on);
  }
}

// One request per memory, four at a time; what fails is named, what succeeded stays done.
async function bulk(verb, request) {
  const ids = [...selected];
  const failures = [];
  let done = 0;
  const worker = async () => {
    while (ids.length) {
      const id = ids.shift();
      try {
        await request(id);
        done += 1;
      } catch (error) {
        if (error instanceof ApiError && error.message === "unauthorised") throw error;
        failures.push(error.message);
      }
    }
  };
  try {
    await Promise.all([worker(), worker(), worker(), worker()]);
  } catch (error) {
    return fail(error);
  }
  if (failures.length) notify(`${verb} ${plural(done, "memory", "memories")}; ${failures.length} failed: ${failures[0]}`);
  else notify(`${verb} ${plural(done, "memory", "memories")}.`, "ok");
  await loadMemories();
  if (openId) openMemory(openId, { quiet: true });
}

const bulkActions = {
  "#bulk-forget": () =>
    confirm(`Forget ${plural(selected.size, "memory", "memories")}? They can be restored until they are purged.`) &&
    bulk("Forgot", (id) => api(`/memories/${id}/forget`, { method: "POST", body: { reason: "forgotten in the memory browser" } })),
  "#bulk-restore": () => bulk("Restored", (id) => api(`/memories/${id}/restore`, { method: "POST" })),
  "#bulk-pin": () => bulk("Pinned", (id) => api(`/memories/${id}`, { method: "PATCH", body: { pinned: true } })),
  "#bulk-unpin": () => bulk("Unpinned", (id) => api(`/memories/${id}`, { method: "PATCH", body: { pinned: false } })),
};

// -- one memory ----------------------------------------------------------------------------

export async function openMemory(id, { quiet = false } = {}) {
  try {
    const [memory, history, versions] = await Promise.all([
      api(`/memories/${id}`),
      api(`/memories/${id}/history`),
      api(`/memories/${id}/versions`),
    ]);
    openId = id;
    for (const tr of $$("#memory-table tbody tr")) tr.classList.toggle("selected", tr.dataset.id === id);
    renderDetail(memory, history, versions);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) closeDetail();
    if (!quiet) fail(error);
  }
}

function closeDetail() {
  openId = null;
  $("#detail").hidden = true;
  document.body.classList.remove("sheet-open");
  for (const tr of $$("#memory-table tbody tr.selected")) tr.classList.remove("selected");
}

function chainOf(versions, current) {
  if (versions.length < 2) return null;
  const link = (v) =>
    el("li", { class: `link status-${v.status}${v.id === current ? " current" : ""}`, "data-id": v.id },
      el("button", { type: "button", class: "link-card", on: { click: () => openMemory(v.id) } },
        el("span", { class: "link-meta" }, `${dateOf(v.created_at)} · ${v.status}`),
        el("span", { class: "link-text" }, v.content)));
  return el("div", { class: "chain-block" },
    el("h3", {}, "Versions"),
    el("p", { class: "hint" }, "Each newer statement of the fact replaced the one before it."),
    el("ol", { id: "versions", class: "chain" }, ...versions.map(link)));
}

function renderDetail(m, history, versions) {
  const content = el("textarea", { id: "edit-content", rows: 4, "aria-label": "Content" }, m.content);
  const type = el("select", { id: "edit-type" }, ...TYPES.map((t) => el("option", { selected: t === m.type }, t)));
  const importance = el("input", { id: "edit-importance", type: "number", min: 0, max: 1, step: 0.05, value: m.importance });
  const tags = el("input", { id: "edit-tags", value: m.tags.join(", "), placeholder: "comma, separated" });
  const fields = { content, type, importance, tags };
  const act = (text, fn, attrs = {}) => el("button", { type: "button", ...attrs, on: { click: fn } }, text);
  const after = async (work, done) => {
    try {
      const changed = await work();
      notify(done, "ok");
      await loadMemories();
      if (changed !== false) await openMemory(m.id);
    } catch (error) {
      const input = error instanceof ApiError ? fields[error.field] : null;
      input?.setAttribute("aria-invalid", "true");
      input?.focus();
      fail(error);
    }
  };
  const save = () => {
    for (const input of Object.values(fields)) input.removeAttribute("aria-invalid");
    return after(() => api(`/memories/${m.id}`, {
      method: "PATCH",
      body: {
        content: content.value,
        type: type.value,
        importance: Number(importance.value),
        tags: tags.value.split(",").map((t) => t.trim()).filter(Boolean),
      },
    }), "Saved.");
  };
  const pin = () => after(() => api(`/memories/${m.id}`, { method: "PATCH", body: { pinned: !m.pinned } }), m.pinned ? "Unpinned." : "Pinned.");
  const forget = () => confirm("Forget this memory? It can be restored until it is purged.") &&
    after(() => api(`/memories/${m.id}/forget`, { method: "POST", body: {} }), "Forgotten: it no longer appears in searches.");
  const restore = () => after(() => api(`/memories/${m.id}/restore`, { method: "POST" }), "Restored.");
  const purge = () =>
    confirm("Purge this memory for good? Its content is erased from the history too. This cannot be undone.") &&
    after(async () => {
      await api(`/memories/${m.id}`, { method: "DELETE" });
      closeDetail();
      return false;
    }, "Purged.");
  const facts = [
    el("span", { class: `badge type-${m.type}` }, m.type),
    el("span", { class: `status status-${m.status}` }, m.status),
    m.pinned ? el("span", { class: "badge pinned" }, "pinned") : null,
    el("span", {}, label(m.layer)),
    owner(m, "span"),
    el("span", {}, m.language),
    el("span", {}, `used ${plural(m.access_count, "time")}`),
    el("span", {}, `said ${plural(m.mentions, "time")}`),
  ];
  fill($("#detail"), [
    el("div", { class: "card-head" }, el("h2", {}, "Memory"), act("Close", closeDetail, { id: "close-detail", class: "ghost" })),
    el("div", { class: "facts" }, ...facts),
    el("p", { class: "hint mono" }, m.id),
    el("dl", { class: "times" },
      el("dt", {}, "Happened"), el("dd", {}, m.occurred_at ? when(m.occurred_at) : "unknown"),
      el("dt", {}, "Stored"), el("dd", {}, when(m.created_at)),
      el("dt", {}, "Last used"), el("dd", {}, m.last_accessed_at ? when(m.last_accessed_at) : "never")),
    el("label", { class: "field" }, "Content", content),
    el("div", { class: "row" },
      el("label", { class: "field" }, "Type", type),
      el("label", { class: "field" }, "Importance", importance, bar(m.importance))),
    el("label", { class: "field" }, "Tags", tags),
    el("div", { class: "row actions" },
      act("Save", save, { id: "save", class: "primary" }),
      m.status === "active" ? act(m.pinned ? "Unpin" : "Pin", pin, { id: "pin" }) : null,
      m.status === "active" ? act("Forget", forget, { id: "forget", class: "danger" }) : null,
      m.status === "forgotten" ? act("Restore", restore, { id: "restore" }) : null,
      m.status === "forgotten" ? act("Purge", purge, { id: "purge", class: "danger" }) : null),
    chainOf(versions, m.id),
    el("h3", {}, "History"),
    el("ol", { class: "history", id: "history" }, ...history.map((e) =>
      el("li", { "data-event": e.event },
        el("div", { class: "when" }, `${when(e.at)} · `, el("strong", {}, e.event), e.actor ? ` · ${e.actor}` : ""),
        e.content ? el("div", {}, e.content) : null,
        e.details?.reason ? el("div", { class: "hint" }, e.details.reason) : null))),
  ]); // no versions block for a memory that never changed
  $("#detail").hidden = false;
  document.body.classList.add("sheet-open");
}

// -- wiring --------------------------------------------------------------------------------

let typing = null;
export function wireMemories() {
  $("#add-form").addEventListener("submit", addMemory);
  $("#filters").addEventListener("submit", (event) => (event.preventDefault(), loadMemories()));
  $("#filters [name=contains]").addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => loadMemories(), 300);
  });
  for (const select of $$("#filters select")) select.addEventListener("change", () => loadMemories());
  $("#more").addEventListener("click", () => loadMemories({ more: true }));
  $("#timeline-clear").addEventListener("click", clearPeriod);
  $("#select-all").addEventListener("change", (e) => selectAll(e.target.checked));
  $("#bulk-clear").addEventListener("click", () => selectAll(false));
  for (const [selector, action] of Object.entries(bulkActions)) $(selector).addEventListener("click", action);
  document.addEventListener("keydown", (e) => e.key === "Escape" && !$("#detail").hidden && closeDetail());
  window.addEventListener("engram:scope", () => {
    closeDetail();
    if (!$("#memories-view").hidden) loadMemories();
  });
}

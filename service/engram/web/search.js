// Search and its explanation: the hits, then why: what each channel found and how they fused.

import { api } from "./api.js";
import { $, bar, el, fill, score, when } from "./dom.js";
import { fail, openMemory, owner } from "./memories.js";
import { scopeFilter } from "./users.js";

// "retrieval": the second vector channel (the bundled retrieval model's vectors).
const CHANNELS = ["vector", "retrieval", "keyword", "rule", "context"];
const CHANNEL_TITLES = {
  vector: "Vector", retrieval: "Retrieval", keyword: "Keyword", rule: "Rule", time: "Time", context: "Context",
};

let searches = 0; // only the newest search is drawn

async function search(event) {
  event.preventDefault();
  const asked = ++searches;
  const form = new FormData($("#search-form"));
  const body = { query: form.get("query"), top_k: Number(form.get("top_k") || 5), explain: true, filter: scopeFilter() };
  if (form.get("now")) body.now = new Date(form.get("now")).toISOString();
  fill($("#search-results"), el("p", { class: "hint" }, "Searching…"));
  try {
    const result = await api("/search", { method: "POST", body });
    if (asked === searches) renderSearch(result);
  } catch (error) {
    if (asked !== searches) return;
    fill($("#search-results"));
    fail(error);
  }
}

function hitCard(h, rank) {
  const m = h.memory;
  const open = () => {
    location.hash = "memories";
    openMemory(m.id);
  };
  return el("article", { class: "hit card", "data-id": m.id },
    el("div", { class: "hit-head" },
      el("span", { class: "rank" }, `#${rank}`),
      el("span", { class: `badge type-${m.type}` }, m.type),
      el("span", { class: "hint" }, when(m.occurred_at ?? m.created_at)),
      owner(m, "span"),
      el("span", { class: "score big", title: "fused score in [0, 1]" }, score(h.score))),
    el("p", { class: "hit-text" }, m.content),
    el("div", { class: "channel-bars" }, ...CHANNELS.map((c) =>
      el("div", { class: `channel-bar ch-${c}`, title: `${c} ${score(h.channels[c])}` },
        el("span", {}, c), bar(h.channels[c]), el("span", { class: "score" }, score(h.channels[c]))))),
    el("button", { type: "button", class: "ghost small", on: { click: open } }, "Open memory"));
}

function renderSearch(result) {
  const e = result.explanation;
  const snippet = (id) => e.snippets[id] ?? id;
  const empty = Object.keys(CHANNEL_TITLES).filter((name) => !e.candidates[name]?.length);
  const channel = (name, title) =>
    !e.candidates[name]?.length ? null : el("div", { class: "channel card", "data-channel": name },
      el("h3", {}, `${title} `, el("span", { class: "hint" }, `${e.candidates[name]?.length ?? 0}`)),
      el("ol", {}, ...(e.candidates[name] ?? []).map((c) => el("li", {}, el("span", { class: "score" }, score(c.score), " "), snippet(c.id)))));
  const facts = [
    ["Searched", `“${e.searched_text}”`],
    e.rewritten ? ["Rewritten", `by the LLM in ${e.rewrite_ms} ms`] : null,
    e.time_window ? ["Time", `“${e.time_window.phrase}” = ${when(e.time_window.start)} – ${when(e.time_window.end)}`] : null,
    e.prefer_recent ? ["Order", "latest first"] : null,
    ["Weights", CHANNELS.map((c) => `${c} ${e.weights[c]}`).join(" · ")],
    ["Words", Object.entries(e.token_idf).map(([t, w]) => `${t} (${w.toFixed(2)})`).join(", ") || "none"],
    e.query_identifiers.length ? ["Identifiers", e.query_identifiers.join(", ")] : null,
  ].filter(Boolean);
  const fused = el("table", { id: "fused", class: "fused" },
    el("thead", {}, el("tr", {}, ...["#", "Memory", "Fused", ...CHANNELS.map((c) => c[0].toUpperCase() + c.slice(1))].map((h) => el("th", {}, h)))),
    el("tbody", {}, ...e.fused.slice(0, 30).map((f, i) =>
      el("tr", {}, el("td", { class: "num", "data-label": "#" }, i + 1), el("td", { class: "memory" }, snippet(f.id)),
        el("td", { class: "num", "data-label": "fused" }, score(f.score)),
        ...CHANNELS.map((c) => el("td", { class: "num", "data-label": c }, score(f.channels[c])))))));
  fill($("#search-results"),
    el("h2", {}, result.hits.length ? `Hits (${result.hits.length})` : "No memory matches"),
    el("div", { id: "hits", class: "hits" }, ...result.hits.map((h, i) => hitCard(h, i + 1))),
    el("details", { class: "card explain", open: true },
      el("summary", {}, el("h2", {}, "Why: every channel's candidates")),
      el("dl", { class: "facts-list" }, ...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
      el("div", { class: "channels" }, ...Object.entries(CHANNEL_TITLES).map(([name, title]) => channel(name, title))),
      empty.length ? el("p", { class: "hint", id: "silent-channels" }, `Nothing found by: ${empty.join(", ")}.`) : null,
      el("h3", {}, "Fused ranking"),
      el("div", { class: "scroll" }, fused)),
  );
}

// Another user picked: the hits shown are redone for them (or dropped, out of sight).
function rescope() {
  if (!$("#search-results").children.length) return;
  if ($("#search-view").hidden || !$("#search-form").checkValidity()) fill($("#search-results"));
  else $("#search-form").requestSubmit();
}

export function wireSearch() {
  $("#search-form").addEventListener("submit", search);
  window.addEventListener("engram:scope", rescope);
}

// The forgetting preview (what the next run would do, and why each memory goes or stays, drawn
// as decay against idle time), and the run itself on request.

import { api } from "./api.js";
import { decayChart, responsive } from "./charts.js";
import { $, $$, el, fill, notify, plural, score } from "./dom.js";
import { fail, loadMemories } from "./memories.js";

function summary(report) {
  const going = report.candidates.filter((c) => c.forget).length;
  const keptByJudge = report.candidates.length - going;
  const stat = (n, text, cls = "") => el("div", { class: `stat ${cls}` }, el("strong", {}, n), el("span", {}, text));
  return el("div", { class: "stats", id: "forgetting-summary" },
    stat(going, report.dry_run ? "would be forgotten" : "forgotten", "bad"),
    stat(keptByJudge, "kept by the judge", "warn"),
    stat(report.expired.length, report.dry_run ? "session/task memories would expire" : "expired"),
    stat(report.purged.length, report.dry_run ? "would be purged" : "purged"),
    ...Object.entries(report.kept_by_reason).map(([why, n]) => stat(n, `stay: ${why}`)));
}

function highlight(id) {
  const target = $(`#forgetting-table tr[data-id="${id}"]`);
  for (const tr of $$("#forgetting-table tr.selected")) tr.classList.remove("selected");
  if (target) {
    target.classList.add("selected");
    target.scrollIntoView({ block: "center", behavior: "smooth" });
  }
}

function render(report) {
  const rows = report.candidates.map((c) =>
    el("tr", { "data-id": c.memory.id, class: c.forget ? "goes" : "stays" },
      el("td", { class: "content" }, c.memory.content),
      el("td", { class: "num", "data-label": "Decay" }, score(c.score)),
      el("td", { "data-label": "Why a candidate" }, c.reason),
      el("td", { "data-label": "Judge" }, el("span", { class: `verdict ${c.forget ? "forget" : "keep"}` }, c.forget ? "forget" : "keep"),
        c.judge_reason ? el("div", { class: "hint" }, c.judge_reason) : null)));
  const chart = el("div", { id: "decay-chart", class: "chart" });
  const weighed = report.candidates.length + report.kept.length;
  fill($("#forgetting-results"),
    summary(report),
    weighed ? el("div", { class: "card" },
      el("div", { class: "card-head" }, el("h2", {}, "Decay"),
        el("span", { class: "hint" }, `each memory loses ${report.daily_decay} a day unless stated, used or restored; below the line the schedule may forget it`)),
      chart,
      el("div", { class: "legend" },
        el("span", { class: "legend-item" }, el("span", { class: "swatch dot-forget" }), "forget"),
        el("span", { class: "legend-item" }, el("span", { class: "swatch dot-judge-kept" }), "kept by the judge"),
        el("span", { class: "legend-item" }, el("span", { class: "swatch dot-kept" }), "stays (pinned, current fact, or above the line)"))) : null,
    el("div", { class: "card flush" },
      el("h2", { class: "pad" }, `Candidates (${report.candidates.length})`),
      report.candidates.length
        ? el("table", { id: "forgetting-table", class: "candidates" },
          el("thead", {}, el("tr", {}, el("th", {}, "Memory"), el("th", { class: "num" }, "Decay"), el("th", {}, "Why a candidate"), el("th", {}, "Judge"))),
          el("tbody", {}, ...rows))
        : el("p", { class: "empty" }, "Nothing is due to be forgotten.")),
  );
  if (weighed) responsive(chart, (width) => decayChart(report, highlight, width));
  $("#run-forgetting").hidden = !report.dry_run;
}

async function preview() {
  try {
    render(await api("/forgetting/run?dry_run=true", { method: "POST" }));
  } catch (error) {
    fail(error);
  }
}

async function runNow() {
  if (!confirm("Run forgetting now? Forgotten memories can be restored until they are purged; purged ones are gone for good.")) return;
  try {
    const report = await api("/forgetting/run", { method: "POST" });
    notify(`Forgot ${plural(report.forgotten.length, "memory", "memories")}, expired ${report.expired.length}, purged ${report.purged.length}.`, "ok");
    render(report);
    loadMemories();
  } catch (error) {
    fail(error);
  }
}

export function wireForgetting() {
  $("#preview").addEventListener("click", preview);
  $("#run-forgetting").addEventListener("click", runNow);
}

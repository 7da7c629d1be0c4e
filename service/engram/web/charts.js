// Pictures drawn as SVG at the container's own pixel width (redrawn when it changes), so text
// stays legible from a phone to a wide screen. Colours come from the stylesheet by class.

import { dateOf, el, label, plural, score, svg } from "./dom.js";

export const TYPES = ["fact", "preference", "event", "task"];
const AXIS = 22; // room for the date labels under a chart

// Redraw `draw(width)` into `container` now and whenever its width changes.
export function responsive(container, draw) {
  container.__observer?.disconnect();
  let width = 0;
  const render = () => {
    const now = Math.floor(container.clientWidth);
    if (now > 0 && now !== width) {
      width = now;
      container.replaceChildren(draw(width));
    }
  };
  container.__observer = new ResizeObserver(render);
  container.__observer.observe(container);
  render();
}

// Whole days at a round step (1, 2, 5, 10, 20, 50... days), at most about `count` of them.
function dayTicks(maxDays, count) {
  const rough = maxDays / count;
  const power = 10 ** Math.floor(Math.log10(Math.max(1, rough)));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? 10 * power;
  return Array.from({ length: Math.floor(maxDays / step) + 1 }, (_, i) => i * step);
}

const ticks = (count, from, to) => Array.from({ length: count }, (_, i) => from + ((to - from) * i) / Math.max(1, count - 1));

// Stacked bars of memories per day, week, month or year, by type; a bar can be picked.
export function timelineChart(timeline, onPick, width) {
  const height = 130;
  const first = Date.parse(timeline.points[0].start);
  const last = Date.parse(timeline.points.at(-1).end);
  const x = (t) => ((t - first) / (last - first)) * (width - 8) + 4;
  const most = Math.max(...timeline.points.map((p) => Object.values(p.counts).reduce((a, b) => a + b, 0)));
  const y = (n) => (n / most) * (height - AXIS - 14);
  const chart = svg("svg", { class: "timeline-chart", width, height, role: "group" });
  for (const p of timeline.points) {
    const [from, to] = [x(Date.parse(p.start)), x(Date.parse(p.end))];
    const barWidth = Math.max(3, Math.min(48, to - from - 1));
    const left = (from + to - barWidth) / 2;
    const total = Object.values(p.counts).reduce((a, b) => a + b, 0);
    const parts = TYPES.filter((t) => p.counts[t]).map((t) => `${p.counts[t]} ${t}`).join(", ");
    const group = svg("g", {
      class: "timeline-bar", tabindex: 0, role: "button", "data-start": p.start,
      "aria-label": `${dateOf(p.start)}: ${parts}`,
      on: { click: () => onPick(p), keydown: (e) => (e.key === "Enter" || e.key === " ") && (e.preventDefault(), onPick(p)) },
    }, svg("title", {}, `${label(timeline.bucket)} of ${dateOf(p.start)}: ${plural(total, "memory", "memories")} (${parts})`),
    svg("rect", { class: "hit-area", x: left - 2, y: 0, width: barWidth + 4, height: height - AXIS }));
    let base = height - AXIS;
    for (const type of TYPES) {
      const h = y(p.counts[type] ?? 0);
      if (!h) continue;
      base -= h;
      group.append(svg("rect", { class: `type-${type}`, x: left, y: base, width: barWidth, height: h, rx: 1.5 }));
    }
    chart.append(group);
  }
  chart.append(svg("line", { class: "axis", x1: 0, x2: width, y1: height - AXIS + 0.5, y2: height - AXIS + 0.5 }));
  const labels = timeline.points.length === 1 ? 1 : Math.max(2, Math.min(6, Math.floor(width / 130)));
  const at = labels === 1 ? [(first + last) / 2] : ticks(labels, first, last - 1);
  // A short span has fewer dates than ticks: each date is written once, where it first falls.
  const shown = new Set();
  at.forEach((t, i) => {
    const text = dateOf(new Date(t).toISOString());
    if (shown.has(text)) return;
    shown.add(text);
    const anchor = labels === 1 ? "middle" : i === 0 ? "start" : i === labels - 1 ? "end" : "middle";
    chart.append(svg("text", { class: "tick", x: x(t), y: height - 6, "text-anchor": anchor }, text));
  });
  return chart;
}

export const legend = (types = TYPES) =>
  types.map((t) => el("span", { class: "legend-item" }, el("span", { class: `swatch type-${t}` }), label(t)));

// Decay score against days without reinforcement for each candidate and each survivor the preview
// lists (the 200 closest to going), with the threshold below which the schedule may forget one and
// the judge's decision on each candidate.
export function decayChart(report, onPick, width) {
  const height = 240;
  const pad = { left: 44, right: 12, top: 12, bottom: 34 };
  const at = Date.parse(report.at);
  const idle = (iso) => Math.max(0, (at - Date.parse(iso)) / 86_400_000);
  const points = [
    ...report.kept.map((k) => ({ id: k.memory_id, content: k.content, score: k.score, days: idle(k.reinforced_at), cls: "kept", why: k.reason })),
    ...report.candidates.map((c) => ({
      id: c.memory.id, content: c.memory.content, score: c.score, days: idle(c.memory.reinforced_at),
      cls: c.forget ? "forget" : "judge-kept", why: c.judge_reason || c.reason,
    })),
  ];
  const scores = [report.threshold, ...points.map((p) => p.score)];
  const [low, high] = [Math.min(...scores), Math.max(...scores)];
  const margin = Math.max(0.05, (high - low) * 0.08);
  const [y0, y1] = [low - margin, high + margin];
  const maxDays = Math.max(7, ...points.map((p) => p.days)) * 1.05; // at least a week, to show the slope
  const x = (d) => pad.left + (d / maxDays) * (width - pad.left - pad.right);
  const y = (s) => pad.top + (1 - (s - y0) / (y1 - y0)) * (height - pad.top - pad.bottom);
  const chart = svg("svg", { class: "decay-chart", width, height, role: "group" });
  for (const s of ticks(4, y0, y1)) {
    chart.append(svg("line", { class: "grid", x1: pad.left, x2: width - pad.right, y1: y(s), y2: y(s) }),
      svg("text", { class: "tick", x: pad.left - 6, y: y(s) + 4, "text-anchor": "end" }, s.toFixed(2)));
  }
  for (const d of dayTicks(maxDays, Math.max(2, Math.min(6, Math.floor(width / 110))))) {
    chart.append(svg("text", { class: "tick", x: x(d), y: height - 16, "text-anchor": "middle" }, `${Math.round(d)} d`));
  }
  chart.append(svg("text", { class: "tick", x: (pad.left + width) / 2, y: height - 2, "text-anchor": "middle" }, "days since last stated, used or restored"));
  chart.append(
    svg("rect", { class: "below-threshold", x: pad.left, y: y(report.threshold), width: width - pad.left - pad.right, height: Math.max(0, y(y0) - y(report.threshold)) }),
    svg("line", { class: "threshold", x1: pad.left, x2: width - pad.right, y1: y(report.threshold), y2: y(report.threshold) }),
    svg("text", { class: "threshold-label", x: width - pad.right - 4, y: y(report.threshold) - 5, "text-anchor": "end" }, `threshold ${report.threshold}`),
  );
  // Without reinforcement every score falls by daily_decay a day: one slope from the highest point.
  const top = points.reduce((a, b) => (b.score > (a?.score ?? -Infinity) ? b : a), null);
  if (top && report.daily_decay > 0) {
    const days = Math.min(maxDays - top.days, (top.score - y0) / report.daily_decay);
    chart.append(svg("line", { class: "slope", x1: x(top.days), y1: y(top.score), x2: x(top.days + days), y2: y(top.score - days * report.daily_decay) }));
  }
  for (const p of points) {
    chart.append(svg("circle", {
      class: `dot ${p.cls}`, cx: x(p.days), cy: y(p.score), r: p.cls === "kept" ? 3.5 : 5, tabindex: 0, "data-id": p.id,
      on: { click: () => onPick(p.id) },
    }, svg("title", {}, `${p.content}\ndecay ${score(p.score)} after ${Math.round(p.days)} days: ${p.why}`)));
  }
  return chart;
}

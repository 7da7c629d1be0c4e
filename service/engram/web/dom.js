// Building and formatting DOM nodes. Text from the server is always set as text (never parsed as
// HTML), and nothing here writes a style attribute, so the strict CSP needs no 'unsafe-inline'.

export const $ = (selector, root = document) => root.querySelector(selector);
export const $$ = (selector, root = document) => [...root.querySelectorAll(selector)];

function build(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "on") for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// Replace a node's children, leaving out the absent ones (a section that does not apply is null).
export const fill = (node, ...children) => node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));

export const el = (tag, attrs = {}, ...children) => build(document.createElement(tag), attrs, children);
export const svg = (tag, attrs = {}, ...children) =>
  build(document.createElementNS("http://www.w3.org/2000/svg", tag), attrs, children);

export const when = (iso) => (iso ? new Date(iso).toLocaleString() : "");
export const dateOf = (iso) => (iso ? new Date(iso).toLocaleDateString(undefined, { dateStyle: "medium" }) : "");
export const score = (x) => (x === undefined || x === null ? "–" : Number(x).toFixed(3));
export const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
export const label = (value) => String(value).replaceAll("_", " ");

// One line at the top of the page for what went wrong (or right): errors stay until dismissed.
let hideTimer = null;
export function notify(message, kind = "error") {
  clearTimeout(hideTimer);
  $("#notice").dataset.kind = kind;
  $("#notice-text").textContent = message;
  $("#notice").hidden = false;
  if (kind !== "error") hideTimer = setTimeout(dismiss, 5000);
}
export function dismiss() {
  $("#notice").hidden = true;
}

// A bar in [0, 1] drawn by an SVG rectangle (a meter element cannot be coloured per channel).
export function bar(value, cls = "") {
  const width = Math.max(0, Math.min(1, Number(value) || 0)) * 100;
  return svg("svg", { class: `bar ${cls}`, viewBox: "0 0 100 6", preserveAspectRatio: "none", "aria-hidden": "true" },
    svg("rect", { class: "bar-track", x: 0, y: 0, width: 100, height: 6, rx: 3 }),
    svg("rect", { class: "bar-fill", x: 0, y: 0, width, height: 6, rx: 3 }));
}

// Whose memories the list and search show: every one, the shared ones alone, or one end user's
// (with the shared ones, or their own only). The picker lists the users by id with their counts,
// found by the start of their id and a page at a time. The choice lives with the key (session
// storage, this tab), so it survives a reload and ends with the session; a change is announced as
// "engram:scope".

import { api, ApiError, tenant } from "./api.js";
import { $, $$, el, fill, notify, plural, when } from "./dom.js";

const storageKey = `engram-scope:${tenant}`;
const PAGE = 50;
const EVERYONE = { user: null, ownOnly: false };

function stored() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(storageKey) ?? "null") ?? {};
    const user = typeof saved.user === "string" && saved.user ? saved.user : null;
    return { user, ownOnly: saved.ownOnly === true };
  } catch {
    return { ...EVERYONE };
  }
}

let scope = stored();
let next = null; // the users page cursor
let requests = 0; // only the newest answer to the typing is drawn
let typing = null;

// -- the scope as the API takes it ---------------------------------------------------------

export const scopeUser = () => scope.user;

export function scopeParams(params = new URLSearchParams()) {
  if (scope.user) params.set("user_id", scope.user);
  if (scope.ownOnly) params.set("own_only", "true"); // without a user: the shared ones alone
  return params;
}

export function scopeFilter() {
  return { ...(scope.user ? { user_id: scope.user } : {}), ...(scope.ownOnly ? { own_only: true } : {}) };
}

// The counts follow the scope exactly (a user, and own_only); the caption says whose they are.
export function statsPath() {
  const params = scopeParams();
  return params.size ? `/stats?${params}` : "/stats";
}
export function countsCaption() {
  if (!scope.user) return scope.ownOnly ? "counting the shared memories, of no user" : "counting every memory of the tenant";
  return scope.ownOnly ? `counting ${scope.user}'s own memories` : `counting ${scope.user}'s memories and the shared ones`;
}

function describe() {
  if (scope.user) return scope.ownOnly ? "their memories only" : "their memories and the shared ones";
  return scope.ownOnly ? "the tenant's shared memories, of no user" : "every user's memories and the shared ones";
}

function render() {
  const name = scope.user ?? (scope.ownOnly ? "Shared only" : "All users");
  $("#user-picked").textContent = name;
  $("#user-picked").title = name;
  $("#scope").dataset.scope = scope.user ? (scope.ownOnly ? "own" : "user") : scope.ownOnly ? "shared" : "all";
  $("#own-only-field").hidden = !scope.user;
  $("#own-only").checked = scope.ownOnly;
  $("#scope-hint").textContent = describe();
}

function change(to) {
  scope = { user: to.user || null, ownOnly: Boolean(to.ownOnly) };
  sessionStorage.setItem(storageKey, JSON.stringify(scope));
  render();
  $("#user-picker").open = false;
  $("#user-prefix").value = ""; // opened again, it lists from the first user
  window.dispatchEvent(new CustomEvent("engram:scope"));
}

// A user picked from the picker or a memory's row; their own-only setting carries over from the
// previous user.
export const pickUser = (user) => change({ user, ownOnly: scope.user ? scope.ownOnly : false });

export function resetScope() {
  sessionStorage.removeItem(storageKey);
  scope = { ...EVERYONE };
  $("#user-picker").open = false;
  render();
}

// -- the picker ----------------------------------------------------------------------------

function entry(attrs, picked, onPick, ...children) {
  return el("li", {},
    el("button", { type: "button", class: `user-option${picked ? " picked" : ""}`, "aria-current": picked ? "true" : null, ...attrs, on: { click: onPick } },
      ...children));
}

function fixedEntries() {
  const all = !scope.user && !scope.ownOnly;
  const shared = !scope.user && scope.ownOnly;
  return [
    entry({ "data-scope": "all" }, all, () => change(EVERYONE),
      el("span", { class: "user-id" }, "All users"), el("span", { class: "hint" }, "and the shared memories")),
    entry({ "data-scope": "shared" }, shared, () => change({ user: null, ownOnly: true }),
      el("span", { class: "user-id" }, "Shared only"), el("span", { class: "hint" }, "memories of no user")),
  ];
}

function userEntry(u) {
  const title = `${u.user_id}: ${u.active} active · ${u.superseded} superseded · ${u.forgotten} forgotten · ` +
    `last written ${when(u.last_written_at)}`;
  return entry({ "data-user": u.user_id, title }, scope.user === u.user_id, () => pickUser(u.user_id),
    el("span", { class: "user-id" }, u.user_id),
    el("span", { class: "user-count" }, el("strong", {}, u.active), " active",
      u.forgotten ? el("span", { class: "forgotten" }, ` · ${u.forgotten} forgotten`) : null));
}

async function loadUsers({ more = false } = {}) {
  const asked = ++requests;
  const prefix = $("#user-prefix").value.trim();
  const params = new URLSearchParams({ limit: String(PAGE) });
  if (prefix) params.set("prefix", prefix);
  if (more && next) params.set("after", next);
  $("#more-users").disabled = true;
  try {
    const page = await api(`/users?${params}`);
    if (asked !== requests) return;
    if (more) $("#user-options").append(...page.users.map(userEntry));
    else fill($("#user-options"), ...fixedEntries(), ...page.users.map(userEntry));
    next = page.next_cursor;
    $("#more-users").hidden = !next;
    const none = !more && page.users.length === 0;
    $("#users-empty").hidden = !none;
    $("#users-empty").textContent = prefix
      ? `No user id starts with “${prefix}”.`
      : "No users yet: memories written with a user_id appear here.";
    $("#users-shown").textContent = `${plural($$("#user-options [data-user]").length, "user")}${next ? " shown" : ""}`;
  } catch (error) {
    if (asked === requests && !(error instanceof ApiError && error.message === "unauthorised")) notify(error.message);
  } finally {
    $("#more-users").disabled = false;
  }
}

function opened() {
  if (!$("#user-picker").open) return;
  next = null;
  loadUsers();
  $("#user-prefix").focus();
}

// Arrows move between the entries, Enter in the box picks the first user shown, Escape closes.
function keys(event) {
  const options = $$("#user-options .user-option");
  const at = options.indexOf(document.activeElement);
  if (event.key === "Escape") {
    event.stopPropagation();
    $("#user-picker").open = false;
    $("#user-picked").focus();
  } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    event.preventDefault();
    const to = event.key === "ArrowDown" ? Math.min(at + 1, options.length - 1) : at - 1;
    if (to < 0) $("#user-prefix").focus();
    else options[to]?.focus();
  } else if (event.key === "Enter" && event.target === $("#user-prefix")) {
    event.preventDefault();
    $("#user-options [data-user]")?.click();
  }
}

export function wireUsers() {
  $("#user-picker").addEventListener("toggle", opened);
  $("#user-picker").addEventListener("keydown", keys);
  $("#user-prefix").addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => ((next = null), loadUsers()), 250);
  });
  $("#more-users").addEventListener("click", () => loadUsers({ more: true }));
  $("#own-only").addEventListener("change", (e) => change({ user: scope.user, ownOnly: e.target.checked }));
  document.addEventListener("click", (e) => {
    if ($("#user-picker").open && !$("#user-picker").contains(e.target)) $("#user-picker").open = false;
  });
  render();
}

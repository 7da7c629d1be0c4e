// engram memory browser: plain ES modules, no framework, no CDN, no build step. This module logs
// in and out, switches views by the URL's hash and keeps the colour theme.

import { api, key, tenant } from "./api.js";
import { $, $$, dismiss } from "./dom.js";
import { wireForgetting } from "./forgetting.js";
import { loadMemories, wireMemories } from "./memories.js";
import { wireSearch } from "./search.js";
import { resetScope, wireUsers } from "./users.js";

const VIEWS = ["memories", "search", "forgetting"];
const current = () => (VIEWS.includes(location.hash.slice(1)) ? location.hash.slice(1) : "memories");

function logout(message = "") {
  key.clear();
  for (const view of $$("main > section")) view.hidden = view.id !== "login-view";
  $("#nav").hidden = true;
  $("#logout").hidden = true;
  $("#scope").hidden = true;
  resetScope(); // the user picked goes with the key
  $("#login-error").textContent = message;
  dismiss();
  $("#key").focus();
}

async function login(event) {
  event.preventDefault();
  key.set($("#key").value.trim());
  $("#key").value = "";
  try {
    await api("/stats");
  } catch (error) {
    if (error.message !== "unauthorised") logout(error.message); // 401/403 logged out with the reason
    return;
  }
  $("#login-error").textContent = "";
  show(current());
}

function show(view) {
  if (!key.get()) return logout();
  $("#nav").hidden = false;
  $("#logout").hidden = false;
  $("#scope").hidden = view === "forgetting"; // forgetting runs over the whole tenant
  for (const section of $$("main > section")) section.hidden = section.id !== `${view}-view`;
  for (const link of $$("#nav a")) link.classList.toggle("current", link.dataset.view === view);
  if (view === "memories") loadMemories();
  if (view === "search") $("#search-form [name=query]").focus();
}

// Auto follows the system; a choice made here sticks in this browser.
const THEMES = ["auto", "light", "dark"];
function applyTheme(theme) {
  if (theme === "auto") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  $("#theme").textContent = `Theme: ${theme}`;
}
function nextTheme() {
  const theme = THEMES[(THEMES.indexOf(localStorage.getItem("engram-theme") ?? "auto") + 1) % THEMES.length];
  localStorage.setItem("engram-theme", theme);
  applyTheme(theme);
}

applyTheme(localStorage.getItem("engram-theme") ?? "auto");
document.title = `${tenant} · engram`;
$("#tenant").textContent = tenant;
$("#login-tenant").textContent = tenant;
$("#login-form").addEventListener("submit", login);
$("#logout").addEventListener("click", () => (key.forgetEverywhere(), logout()));
$("#theme").addEventListener("click", nextTheme);
$("#notice-close").addEventListener("click", dismiss);
window.addEventListener("engram:unauthorised", (event) => logout(event.detail));
window.addEventListener("hashchange", () => show(current()));
window.addEventListener("engram:key", () => show(current())); // another tab lent its key
wireUsers();
wireMemories();
wireSearch();
wireForgetting();
if (key.get()) show(current());
else {
  logout();
  key.askOtherTabs();
}

// The REST API of this page's tenant. The key lives in session storage and travels only as a
// bearer header; a 401 or 403 ends the session (the app listens for "engram:unauthorised").
// A new tab asks the tabs already open in this browser for the key (a BroadcastChannel, this
// origin only): one login serves every tab, and nothing outlives the browser's session.

export const tenant = decodeURIComponent(location.pathname.split("/")[2] || "");
const storageKey = `engram-key:${tenant}`;

const tabs = "BroadcastChannel" in window ? new BroadcastChannel(`engram-keys:${tenant}`) : null;

export const key = {
  get: () => sessionStorage.getItem(storageKey),
  set: (value) => sessionStorage.setItem(storageKey, value),
  clear: () => sessionStorage.removeItem(storageKey),
  askOtherTabs: () => tabs?.postMessage({ ask: true }),
  // Logging out is for every tab of this tenant.
  forgetEverywhere: () => tabs?.postMessage({ forget: true }),
};

tabs?.addEventListener("message", ({ data }) => {
  if (data?.ask && key.get()) tabs.postMessage({ key: key.get() });
  else if (typeof data?.key === "string" && !key.get()) {
    key.set(data.key);
    window.dispatchEvent(new Event("engram:key"));
  } else if (data?.forget && key.get()) {
    window.dispatchEvent(new CustomEvent("engram:unauthorised", { detail: "Logged out in another tab." }));
  }
});

export class ApiError extends Error {
  constructor(message, { status = 0, field = null } = {}) {
    super(message);
    this.status = status;
    this.field = field;
  }
}

export async function api(path, { method = "GET", body } = {}) {
  let response;
  try {
    response = await fetch(`/t/${encodeURIComponent(tenant)}/v1${path}`, {
      method,
      headers: { Authorization: `Bearer ${key.get()}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError("The engram service cannot be reached. Is it running?");
  }
  if (response.status === 401 || response.status === 403) {
    window.dispatchEvent(new CustomEvent("engram:unauthorised", { detail: "That key does not open this tenant." }));
    throw new ApiError("unauthorised", { status: response.status });
  }
  if (!response.ok) {
    const error = (await response.json().catch(() => ({}))).error ?? {};
    const message = error.message || `${response.status} ${response.statusText}`;
    throw new ApiError(message, { status: response.status, field: error.field ?? null });
  }
  return response.status === 204 ? null : response.json();
}

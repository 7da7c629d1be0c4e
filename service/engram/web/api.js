// The REST API of this page's tenant. The key lives in session storage and travels only as a
// bearer header; a 401 or 403 ends the session (the app listens for "engram:unauthorised").

export const tenant = decodeURIComponent(location.pathname.split("/")[2] || "");
const storageKey = `engram-key:${tenant}`;

export const key = {
  get: () => sessionStorage.getItem(storageKey),
  set: (value) => sessionStorage.setItem(storageKey, value),
  clear: () => sessionStorage.removeItem(storageKey),
};

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

// Small fetch helpers shared by the dashboard's API modules.

const RETRYABLE_STATUS = new Set([408, 429, 500, 502, 503, 504]);

export class HttpError extends Error {
  constructor(response, body) {
    super(`${response.status} ${response.statusText} for ${response.url}`);
    this.name = "HttpError";
    this.status = response.status;
    this.body = body;
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function backoffDelay(attempt, baseMs) {
  const jitter = Math.random() * baseMs;
  return baseMs * 2 ** attempt + jitter;
}

async function readBody(response) {
  const type = response.headers.get("content-type") ?? "";
  if (response.status === 204) {
    return null;
  }
  return type.includes("application/json") ? response.json() : response.text();
}

/**
 * Fetch a URL and decode its JSON body, retrying transient failures with
 * exponential backoff. Each attempt is aborted after `timeoutMs` milliseconds.
 */
export async function fetchJson(
  url,
  { method = "GET", body, headers = {}, retries = 3, backoffMs = 250, timeoutMs = 10_000 } = {},
) {
  const init = {
    method,
    headers: { Accept: "application/json", ...headers },
  };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  for (let attempt = 0; ; attempt++) {
    let response;
    try {
      response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    } catch (err) {
      if (attempt >= retries) {
        throw err;
      }
      await sleep(backoffDelay(attempt, backoffMs));
      continue;
    }
    if (response.ok) {
      return readBody(response);
    }
    if (RETRYABLE_STATUS.has(response.status) && attempt < retries) {
      await sleep(backoffDelay(attempt, backoffMs));
      continue;
    }
    throw new HttpError(response, await readBody(response).catch(() => null));
  }
}

export function withQuery(url, params) {
  const target = new URL(url, globalThis.location?.href ?? "http://localhost");
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null) {
      continue;
    }
    target.searchParams.set(key, String(value));
  }
  return target.toString();
}

export const api = {
  get: (url, params, options) => fetchJson(params ? withQuery(url, params) : url, options),
  post: (url, body, options) => fetchJson(url, { ...options, method: "POST", body }),
  put: (url, body, options) => fetchJson(url, { ...options, method: "PUT", body }),
  delete: (url, options) => fetchJson(url, { ...options, method: "DELETE" }),
};

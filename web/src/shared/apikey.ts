/**
 * The API key both pages use, kept in sessionStorage (this tab only, gone when it closes) and sent
 * as `Authorization: Bearer <key>`. GraphiQL and the explorer share it: they are one origin.
 */

const STORAGE_KEY = "graphsvc.apiKey";

/** Where the key lives when sessionStorage is unavailable (a privacy mode): this page only. */
let fallback = "";

/** The key saved in this tab, or "" when there is none (or storage is unavailable). */
export function readApiKey(): string {
  try {
    return window.sessionStorage.getItem(STORAGE_KEY) ?? "";
  } catch {
    return fallback;
  }
}

/** Save the key for this tab; an empty key removes it. */
export function writeApiKey(key: string): void {
  const trimmed = key.trim();
  fallback = trimmed;
  try {
    if (trimmed) {
      window.sessionStorage.setItem(STORAGE_KEY, trimmed);
    } else {
      window.sessionStorage.removeItem(STORAGE_KEY);
    }
  } catch {
    // Storage disabled: `fallback` keeps the key until the page is left.
  }
}

/** The Authorization header for a key, or none. */
export function authHeaders(key: string): Record<string, string> {
  return key ? { Authorization: `Bearer ${key}` } : {};
}

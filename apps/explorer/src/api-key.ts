// The API key the user typed. Kept in sessionStorage, not localStorage: it lives as long as the tab, is
// never written to disk beyond the browser session, and another tab starts without it.
const STORAGE_KEY = 'cairn.apiKey';

export function readApiKey(): string {
  try {
    return sessionStorage.getItem(STORAGE_KEY) ?? '';
  } catch {
    // Storage can be disabled (privacy settings); the key then lives only in memory for this page.
    return memoryKey;
  }
}

let memoryKey = '';

export function writeApiKey(key: string): void {
  memoryKey = key;
  try {
    if (key) sessionStorage.setItem(STORAGE_KEY, key);
    else sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // See readApiKey.
  }
}

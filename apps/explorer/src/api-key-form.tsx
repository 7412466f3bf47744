import { useState } from 'preact/hooks';
import { readApiKey, writeApiKey } from './api-key.js';

/**
 * The API key box. The page itself loads without a key; every data call sends the key typed here, so the
 * explorer sees exactly what that key may see through the API. Blank: no key (a server with auth off).
 */
export function ApiKeyForm({ onChange }: { onChange: () => void }) {
  const [draft, setDraft] = useState(readApiKey);
  const [saved, setSaved] = useState(readApiKey);
  const submit = (e: Event) => {
    e.preventDefault();
    writeApiKey(draft.trim());
    setSaved(draft.trim());
    onChange();
  };
  return (
    <form class="key-form" onSubmit={submit}>
      <label for="api-key">API key</label>
      <input
        id="api-key"
        name="api-key"
        type="password"
        autocomplete="off"
        placeholder="none (auth off)"
        value={draft}
        onInput={(e) => setDraft(e.currentTarget.value)}
      />
      <button type="submit">Use key</button>
      <span class="muted key-state" data-testid="key-state">
        {saved ? 'key set for this tab' : 'no key'}
      </span>
    </form>
  );
}

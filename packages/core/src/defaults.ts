/**
 * `{ ...defaults, ...options }`, except that an option explicitly set to `undefined` keeps its default.
 * Plain spreading lets `{ batchSize: undefined }` silently erase a default, which is how options
 * forwarded from a CLI flag that was not given usually look.
 */
export function withDefaults<T extends object>(defaults: Readonly<T>, options: Partial<T> | undefined): T {
  const out = { ...defaults } as T;
  if (!options) return out;
  for (const [k, v] of Object.entries(options)) {
    if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  }
  return out;
}

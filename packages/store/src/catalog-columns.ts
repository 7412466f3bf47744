import type { ScoringFields, SearchFilters } from '@cairn/core';
import type { CatalogChunk } from './catalog-chunk.js';
import { PackedIds } from './packed-ids.js';

/** A filter with its strings turned into the catalog's numbers, checked once per key. */
export interface CompiledFilter {
  /** The namespace's interned id + 1, as the catalog stores it for a live memory. */
  namespace: number;
  kinds: Int32Array | null;
  sessions: Int32Array | null;
  agents: Int32Array | null;
  tags: Int32Array | null;
  slots: Int32Array | null;
  since: number;
  until: number;
  /** NaN: no as-of time. */
  asOf: number;
}

/**
 * The key catalog's columns (see `KeyCatalog`, which keeps them current): what every search asks of each
 * candidate, in typed arrays indexed by key, with the strings (namespaces, kinds, sessions, agents, tags,
 * slots) interned as numbers. Reads here are as of the last chunk applied.
 */
export class CatalogColumns {
  /** Interned namespace id + 1 while the memory is live; 0 when it is absent, superseded or deleted. */
  private live = new Int32Array(0);
  private ts = new Float64Array(0);
  /** The row's `meta_seq` when last applied. */
  private stamp = new Float64Array(0);
  private importance = new Float64Array(0);
  /** NaN when the writer stated none. */
  private confidence = new Float64Array(0);
  /** Interned fact slot; 0 when none. */
  private slot = new Int32Array(0);
  /** The validity window; ±Infinity for an open end. */
  private validFrom = new Float64Array(0);
  private validTo = new Float64Array(0);
  private kind = new Int32Array(0);
  /** Interned session / agent; 0 when the memory has none. */
  private session = new Int32Array(0);
  private agent = new Int32Array(0);
  private tags: Array<Int32Array | undefined> = [];
  private readonly ids = new PackedIds();
  private readonly strings = new Map<string, number>();
  /** The interned strings by id (index 0 unused), to name a memory's session and agent back. */
  private readonly names: string[] = [''];

  /** The filter in the catalog's numbers; null when nothing can pass (a namespace or value never seen). */
  compile(namespace: string, filters: SearchFilters): CompiledFilter | null {
    const ns = this.strings.get(namespace);
    if (ns === undefined) return null;
    // Filter lists are short: a scan of a few ints beats hashing, and this runs once per lexical match.
    const set = (values: readonly string[] | undefined): Int32Array | null | false => {
      if (!values?.length) return null;
      const ids = new Set<number>();
      for (const v of values) {
        const id = this.strings.get(v);
        if (id !== undefined) ids.add(id);
      }
      return ids.size > 0 ? Int32Array.from(ids) : false;
    };
    const kinds = set(filters.kinds);
    const sessions = set(filters.sessions);
    const agents = set(filters.agents);
    const tags = set(filters.tags);
    const slots = set(filters.slots);
    if (kinds === false || sessions === false || agents === false || tags === false || slots === false)
      return null;
    return {
      namespace: ns + 1,
      kinds,
      sessions,
      agents,
      tags,
      slots,
      since: filters.since ?? Number.NEGATIVE_INFINITY,
      until: filters.until ?? Number.POSITIVE_INFINITY,
      asOf: filters.asOf ?? Number.NaN,
    };
  }

  /** Whether the memory stored under `key` is live, of the filter's namespace, and passes it. */
  passes(key: number, f: CompiledFilter): boolean {
    if (key >= this.live.length || this.live[key] !== f.namespace) return false;
    const ts = this.ts[key]!;
    if (ts < f.since || ts >= f.until) return false;
    if (f.kinds && !includes(f.kinds, this.kind[key]!)) return false;
    if (f.sessions && !includes(f.sessions, this.session[key]!)) return false;
    if (f.agents && !includes(f.agents, this.agent[key]!)) return false;
    if (f.slots && !includes(f.slots, this.slot[key]!)) return false;
    if (!Number.isNaN(f.asOf) && (this.validFrom[key]! > f.asOf || this.validTo[key]! <= f.asOf))
      return false;
    if (f.tags) {
      const tags = this.tags[key];
      if (!tags) return false;
      let any = false;
      for (let i = 0; i < tags.length && !any; i++) any = includes(f.tags, tags[i]!);
      if (!any) return false;
    }
    return true;
  }

  /** The subset of `keys` that are live memories of `namespace` passing `filters`. */
  allowed(namespace: string, keys: readonly number[], filters: SearchFilters): Set<number> {
    const out = new Set<number>();
    const f = this.compile(namespace, filters);
    if (!f) return out;
    for (const k of keys) if (this.passes(k, f)) out.add(k);
    return out;
  }

  /** The `meta_seq` the row had when the catalog last read it. */
  stampOf(key: number): number {
    return key < this.stamp.length ? this.stamp[key]! : -1;
  }

  /**
   * The share of the namespace's live memories passing `filters`, from keys probed evenly over the whole
   * key range (time filters follow the key order, so the probes must span it); null when fewer
   * than 64 probes landed in the namespace (a small namespace among large ones).
   */
  passRate(namespace: string, filters: SearchFilters, probes = 4_096): number | null {
    const f = this.compile(namespace, filters);
    const ns = this.strings.get(namespace);
    if (ns === undefined) return null;
    if (!f) return 0;
    const n = this.live.length;
    const count = Math.min(n, probes);
    let inNamespace = 0;
    let passing = 0;
    for (let i = 0; i < count; i++) {
      const key = Math.floor((i * n) / count);
      if (this.live[key] !== ns + 1) continue;
      inNamespace++;
      if (this.passes(key, f)) passing++;
    }
    return inNamespace >= 64 ? passing / inNamespace : null;
  }

  /**
   * What tells each key's session (an interned id; 0 when the memory has none) and whether it is a live
   * memory of `namespace` (`live[key] === member`), as arrays read in place by a caller that asks for every
   * match of a query (see `SessionNumbering`). Valid until the arrays grow (`ensure`).
   */
  sessionArrays(namespace: string): { live: Int32Array; member: number; sessions: Int32Array } {
    const ns = this.strings.get(namespace);
    // -1 is never a live entry: no memory counts.
    return { live: this.live, member: ns === undefined ? -1 : ns + 1, sessions: this.session };
  }

  /** A test of whether a key is a live memory of `namespace`. */
  membersOf(namespace: string): (key: number) => boolean {
    const ns = this.strings.get(namespace);
    if (ns === undefined) return () => false;
    const live = this.live;
    return (key) => key < live.length && live[key] === ns + 1;
  }

  /** Scoring fields of the live memories of `namespace` among `keys`. */
  scoring(namespace: string, keys: readonly number[]): Map<number, ScoringFields> {
    const out = new Map<number, ScoringFields>();
    const ns = this.strings.get(namespace);
    if (ns === undefined) return out;
    for (const key of keys) {
      if (key >= this.live.length || this.live[key] !== ns + 1) continue;
      const session = this.session[key]!;
      const agent = this.agent[key]!;
      out.set(key, {
        key,
        id: this.ids.get(key)!,
        ts: this.ts[key]!,
        kind: this.names[this.kind[key]!]!,
        importance: this.importance[key]!,
        confidence: Number.isNaN(this.confidence[key]!) ? null : this.confidence[key]!,
        session: session === 0 ? null : this.names[session]!,
        agent: agent === 0 ? null : this.names[agent]!,
      });
    }
    return out;
  }

  /** Applies a chunk of rows, read by the catalog or on a reader thread (see `catalogChunkOf`). */
  apply(c: CatalogChunk): void {
    const n = c.keys.length;
    if (n === 0) return;
    // A load's chunk is in key order; a catch-up's, in change order.
    let maxKey = c.keys[n - 1]!;
    for (let i = 0; i < n; i++) if (c.keys[i]! > maxKey) maxKey = c.keys[i]!;
    this.ensure(maxKey);
    // The chunk's own string numbers, in the catalog's (0 stays "none").
    const ids = new Int32Array(c.names.length + 1);
    for (let i = 0; i < c.names.length; i++) ids[i + 1] = this.intern(c.names[i]!);
    for (let i = 0; i < n; i++) {
      const k = c.keys[i]!;
      this.stamp[k] = c.stamp[i]!;
      this.live[k] = c.live[i] ? ids[c.namespace[i]!]! + 1 : 0;
      this.ts[k] = c.ts[i]!;
      this.importance[k] = c.importance[i]!;
      this.confidence[k] = c.confidence[i]!;
      this.slot[k] = ids[c.slot[i]!]!;
      this.validFrom[k] = c.validFrom[i]!;
      this.validTo[k] = c.validTo[i]!;
      this.kind[k] = ids[c.kind[i]!]!;
      this.session[k] = ids[c.session[i]!]!;
      this.agent[k] = ids[c.agent[i]!]!;
      const from = c.tagStart[i]!;
      const to = c.tagStart[i + 1]!;
      this.tags[k] = to > from ? Int32Array.from(c.tagValues.subarray(from, to), (t) => ids[t]!) : undefined;
      this.ids.setBytes(k, c.idBytes, i === 0 ? 0 : c.idEnds[i - 1]!, c.idEnds[i]!);
    }
  }

  /** Strings get ids from 1 up, so 0 can mean "none". */
  private intern(s: string): number {
    let id = this.strings.get(s);
    if (id === undefined) {
      id = this.strings.size + 1;
      this.strings.set(s, id);
      this.names[id] = s;
    }
    return id;
  }

  /** Room for keys up to `maxKey`, grown by half at least (see `KeyCatalog`'s `fits`). */
  ensure(maxKey: number): void {
    if (maxKey < this.live.length) return;
    const cap = Math.max(maxKey + 1, Math.ceil(this.live.length * 1.5), 1024);
    const grow = <T extends Int32Array | Float64Array>(a: T, make: (n: number) => T): T => {
      const b = make(cap);
      b.set(a);
      return b;
    };
    this.live = grow(this.live, (n) => new Int32Array(n));
    this.ts = grow(this.ts, (n) => new Float64Array(n));
    this.stamp = grow(this.stamp, (n) => new Float64Array(n));
    this.importance = grow(this.importance, (n) => new Float64Array(n));
    this.confidence = grow(this.confidence, (n) => new Float64Array(n));
    this.slot = grow(this.slot, (n) => new Int32Array(n));
    this.validFrom = grow(this.validFrom, (n) => new Float64Array(n));
    this.validTo = grow(this.validTo, (n) => new Float64Array(n));
    this.kind = grow(this.kind, (n) => new Int32Array(n));
    this.session = grow(this.session, (n) => new Int32Array(n));
    this.agent = grow(this.agent, (n) => new Int32Array(n));
    this.ids.ensure(cap - 1);
  }

  /** Gives the arrays back (the catalog turned off for good). */
  clear(): void {
    this.live = new Int32Array(0);
    this.tags = [];
    this.ids.clear();
  }
}

function includes(list: Int32Array, value: number): boolean {
  for (let i = 0; i < list.length; i++) if (list[i] === value) return true;
  return false;
}

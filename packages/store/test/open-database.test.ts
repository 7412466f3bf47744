import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_MMAP_BYTES, openDatabase } from '@cairn/store';
import { afterEach, describe, expect, it } from 'vitest';

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('openDatabase', () => {
  it('maps the file and keeps a 64 MiB page cache for writers and readers alike', () => {
    dir = mkdtempSync(join(tmpdir(), 'cairn-open-'));
    const path = join(dir, 'cairn.db');
    const writer = openDatabase(path);
    const reader = openDatabase(path, { readonly: true });
    const off = openDatabase(path, { readonly: true, mmapBytes: 0 });
    try {
      for (const db of [writer, reader]) {
        expect(db.pragma('mmap_size', { simple: true })).toBe(DEFAULT_MMAP_BYTES);
        expect(db.pragma('cache_size', { simple: true })).toBe(-65536);
      }
      expect(off.pragma('mmap_size', { simple: true })).toBe(0);
      expect(writer.pragma('journal_mode', { simple: true })).toBe('wal');
    } finally {
      for (const db of [writer, reader, off]) db.close();
    }
  });
});

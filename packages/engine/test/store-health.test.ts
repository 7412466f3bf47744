import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore, readRecordedIntegrity, recordIntegrity } from '@cairn/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreHealth } from '../src/index.js';

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-health-'));
  path = join(dir, 'cairn.db');
  new MemoryStore({ path }).close();
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the integrity verdict recorded beside cairn.db (what cairn stats reports)', () => {
  it('a sound start-up check does not clear damage this process met while it ran', async () => {
    const health = new StoreHealth(path, () => {});
    const checked = health.check();
    health.observe(Object.assign(new Error('database disk image is malformed'), { code: 'SQLITE_CORRUPT' }));
    const report = await checked;
    expect(report?.ok).toBe(true);
    expect(health.status.state).toBe('damaged');
    expect(readRecordedIntegrity(path)).toMatchObject({ ok: false });
    await health.close();
  });

  it("a quick check's 'sound' leaves a full check's 'damaged' in place; a full check clears it", () => {
    recordIntegrity(
      path,
      { ok: false, depth: 'full', problems: ['row 1 missing from index'] },
      'cairn check',
    );
    recordIntegrity(path, { ok: true, depth: 'quick', problems: [] }, 'a start-up check');
    expect(readRecordedIntegrity(path)).toMatchObject({ ok: false, depth: 'full', by: 'cairn check' });
    recordIntegrity(path, { ok: true, depth: 'full', problems: [] }, 'cairn check');
    expect(readRecordedIntegrity(path)).toMatchObject({ ok: true, depth: 'full' });
    // Quick damage is replaced by a later quick verdict either way: it read what the quick check reads.
    recordIntegrity(path, { ok: false, depth: 'quick', problems: ['page 7 is never used'] }, 'serve');
    recordIntegrity(path, { ok: true, depth: 'quick', problems: [] }, 'serve');
    expect(readRecordedIntegrity(path)).toMatchObject({ ok: true, depth: 'quick' });
  });
});

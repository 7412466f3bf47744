import { statSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path'; import { tmpdir } from 'node:os';
import { openDatabase } from '@cairn/store';
import { BackgroundCheckpointer } from './dist/background-checkpointer.js';
for (const restartFrames of [Number.POSITIVE_INFINITY, 256]) {
  const path = join(mkdtempSync(join(tmpdir(), 'walt-')), 'cairn.db');
  const db = openDatabase(path);
  db.exec('CREATE TABLE filler (id INTEGER PRIMARY KEY, body TEXT)');
  const cp = new BackgroundCheckpointer(path, db, (l, m) => console.log(l, m), 10, { restartFrames });
  cp.start();
  await new Promise((r) => setTimeout(r, 300));
  const ins = db.prepare('INSERT INTO filler (id, body) VALUES (?, ?)');
  const tx = db.transaction((from) => { for (let i = from; i < from + 20; i++) ins.run(i, 'x'.repeat(4000)); });
  let max = 0, id = 0; const t0 = performance.now();
  while (performance.now() - t0 < 2500) { tx.immediate(id); id += 20; const tb = performance.now(); while (performance.now() - tb < Number(process.env.GAPMS ?? 0)); await new Promise((r) => setImmediate(r)); if (id % 400 === 0) max = Math.max(max, statSync(`${path}-wal`).size); }
  await cp.stop();
  console.log('restartFrames', restartFrames, 'rows', id, 'max WAL MB', (max / 1e6).toFixed(1));
  db.close();
}

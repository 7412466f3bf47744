import { statSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path'; import { tmpdir } from 'node:os';
import { openDatabase } from '@cairn/store';
import { BackgroundCheckpointer } from './dist/background-checkpointer.js';
const path = join(mkdtempSync(join(tmpdir(), 'walt-')), 'cairn.db');
const db = openDatabase(path);
db.exec('CREATE TABLE filler (id INTEGER PRIMARY KEY, body TEXT)');
const cp = new BackgroundCheckpointer(path, db, () => {}, 10, { restartFrames: 256 });
const orig = db.pragma.bind(db); let catchups = [];
db.pragma = (s, o) => { const r = orig(s, o); if (s.includes('RESTART')) catchups.push(JSON.stringify(r)); return r; };
cp.start();
const ins = db.prepare('INSERT INTO filler (id, body) VALUES (?, ?)');
const batch = db.transaction((from) => { for (let i = from; i < from + 20; i++) ins.run(i, 'x'.repeat(4000)); });
let max = 0; const sizes = [];
for (let id = 0; id < 12000; id += 20) {
  cp.catchUp(); batch.immediate(id);
  const t = performance.now(); while (performance.now() - t < 1);
  await new Promise((r) => setImmediate(r));
  const sz = statSync(`${path}-wal`).size; if (sz > max) { max = sz; sizes.push([id, (sz / 1e6).toFixed(1)]); }
}
await cp.stop();
console.log('catchups', catchups.length, catchups.slice(0, 5), 'max', max, sizes.slice(-8));

import Database from 'better-sqlite3';
import { execSync } from 'node:child_process';
execSync('rm -rf /tmp/dcopy && cp -r /tmp/d100k /tmp/dcopy');
const db = new Database('/tmp/dcopy/cairn.db');
db.pragma('cache_size = -65536'); db.pragma('journal_mode = WAL'); db.pragma('synchronous = NORMAL'); db.pragma('foreign_keys = ON');
const V = process.env.V ?? 'base';
const rows = db.prepare('SELECT space, key, namespace, content_hash, seq, vector, write_seq FROM embeddings ORDER BY write_seq').raw().all();
console.log('rows', rows.length, 'blob bytes', rows[0][5].length);
let t = performance.now();
db.exec('DELETE FROM embeddings');
console.log('delete', (performance.now() - t).toFixed(0));
if (V === 'notrigger') db.exec('DROP TRIGGER space_vectors_ai');
if (V === 'noidx') { db.exec('DROP INDEX embeddings_space_hash'); db.exec('DROP INDEX embeddings_space_write'); db.exec('DROP INDEX embeddings_space_ns_write_key'); }
if (V.startsWith('drop:')) db.exec('DROP INDEX ' + V.slice(5));
if (V === 'nofk') db.pragma('foreign_keys = OFF');
const upsert = db.prepare(`INSERT INTO embeddings (space, key, namespace, content_hash, seq, vector, write_seq)
       SELECT ?, key, namespace, content_hash, change_seq, ?, ? FROM memories WHERE key = ? AND change_seq = ?
       ON CONFLICT (space, key) DO UPDATE SET content_hash = excluded.content_hash, seq = excluded.seq,
         vector = excluded.vector, namespace = excluded.namespace, write_seq = excluded.write_seq`);
const plain = db.prepare(`INSERT INTO embeddings (space, key, namespace, content_hash, seq, vector, write_seq) VALUES (?,?,?,?,?,?,?)`);
const clearFailure = db.prepare('DELETE FROM embed_failures WHERE space = ? AND key = ?');
const batch = db.transaction((b) => { for (const r of b) { if (V === 'plain') plain.run(...r); else { upsert.run(r[0], r[5], r[6], r[1], r[4]); if (V !== 'noclear') clearFailure.run(r[0], r[1]); } } });
t = performance.now();
for (let i = 0; i < rows.length; i += 1000) batch.immediate(rows.slice(i, i + 1000));
const s = performance.now() - t;
console.log(V, 'put ms', s.toFixed(0), 'per row µs', (s * 1000 / rows.length).toFixed(1));

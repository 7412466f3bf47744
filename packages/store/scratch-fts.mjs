import Database from 'better-sqlite3';
const src = new Database('/tmp/d100c/cairn.db', { readonly: true });
const rows = src.prepare('SELECT key, title, text, parts, scope, context FROM memories ORDER BY key').raw().all();
const len = (i) => rows.reduce((a, r) => a + (r[i]?.length ?? 0), 0) / rows.length;
console.log('avg chars title/text/parts/scope/context', [1, 2, 3, 4, 5].map(len).map((x) => x.toFixed(0)).join(' / '));
for (const cols of [['title', 'text', 'parts', 'scope', 'context'], ['title', 'text'], ['context'], ['parts', 'scope']]) {
  const db = new Database(':memory:');
  db.exec(`CREATE VIRTUAL TABLE f USING fts5 (${cols.join(', ')}, tokenize = "porter unicode61 remove_diacritics 2 tokenchars '_'")`);
  const idx = cols.map((c) => ['title', 'text', 'parts', 'scope', 'context'].indexOf(c) + 1);
  const ins = db.prepare(`INSERT INTO f (rowid, ${cols.join(', ')}) VALUES (?${', ?'.repeat(cols.length)})`);
  const tx = db.transaction((b) => { for (const r of b) ins.run(r[0], ...idx.map((i) => r[i])); });
  const t = performance.now();
  for (let i = 0; i < rows.length; i += 1000) tx(rows.slice(i, i + 1000));
  const ms = performance.now() - t;
  console.log(cols.join(','), 'µs/row', (ms * 1000 / rows.length).toFixed(1));
}

// Worker-thread entry: reads the next chunk of the key catalog with a read-only connection of the worker's
// own, so loading a large catalog (~3 s of row reads at a million memories) never holds the serving thread.
import { type CatalogChunk, readCatalogChunk } from './catalog-chunk.js';
import { withReaderConnection } from './reader-connection.js';

export default function readCatalogChunkTask(req: {
  path: string;
  afterKey: number;
  limit: number;
}): CatalogChunk {
  return withReaderConnection(req.path, (db) => readCatalogChunk(db, req.afterKey, req.limit));
}

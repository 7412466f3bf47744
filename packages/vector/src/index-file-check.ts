import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';

/**
 * Checks that a usearch index file is whole before usearch reads it: usearch 2.26's `Index.load` spins
 * forever on some damaged files instead of throwing. The file layout is a vector block
 * (`rows: u32, bytesPerRow: u32`, then the rows) followed by the graph, whose header starts with the
 * ASCII magic "usearch". Returns null when the file looks whole, else the reason it does not.
 */
export function checkIndexFile(
  path: string,
  expected: {
    /**
     * Rows in the vector block: the graph's size, or more after a merge removed keys (usearch keeps a
     * removed key's slot in the file).
     */
    rows: number;
    dimensions: number;
    bytes: number;
    bytesPerScalar: number;
  },
): string | null {
  let size: number;
  try {
    size = statSync(path).size;
  } catch {
    return 'index file missing';
  }
  if (size !== expected.bytes) return `index file is ${size} bytes, its sidecar recorded ${expected.bytes}`;
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(8);
    if (readSync(fd, head, 0, 8, 0) !== 8) return 'index file truncated';
    const rows = head.readUInt32LE(0);
    const bytesPerRow = head.readUInt32LE(4);
    const rowBytes = expected.dimensions * expected.bytesPerScalar;
    if (rows !== expected.rows || bytesPerRow !== rowBytes) {
      return `index file holds ${rows} rows of ${bytesPerRow} bytes, expected ${expected.rows} of ${rowBytes}`;
    }
    const magicAt = 8 + rows * bytesPerRow;
    const magic = Buffer.alloc(7);
    if (readSync(fd, magic, 0, 7, magicAt) !== 7 || magic.toString('latin1') !== 'usearch')
      return 'index file has no usearch header';
    return null;
  } finally {
    closeSync(fd);
  }
}

/** The number of rows in a usearch index file's vector block (its first four bytes). */
export async function indexFileRows(path: string): Promise<number> {
  const file = await open(path, 'r');
  try {
    const head = Buffer.alloc(4);
    const { bytesRead } = await file.read(head, 0, 4, 0);
    if (bytesRead !== 4) throw new Error(`index file ${path} is truncated`);
    return head.readUInt32LE(0);
  } finally {
    await file.close();
  }
}

/** Ids placed before their average length is trusted to size the buffer. */
const EXPECT_AFTER_IDS = 1_000;
/** Room beyond the expected size: ids tend to grow longer as keys grow (`…-s2124-m0`). */
const EXPECT_MARGIN = 1.25;

/**
 * Memory ids by key, as UTF-8 in one growing buffer. A million ids held as strings are a million heap
 * objects, which every full garbage collection marks: at a million memories that marking was ~50 ms of
 * the serving thread every few seconds, in steps of up to 10 ms. A key's id never changes (a rewrite keeps
 * its key, a supersession makes a new one), so each is written once.
 */
export class PackedIds {
  private bytes = Buffer.alloc(0);
  private used = 0;
  /** Where each key's id starts in `bytes`; -1: none. */
  private start = new Int32Array(0);
  private length = new Int32Array(0);
  /** Ids placed, for the average length that sizes the buffer. */
  private placed = 0;

  /** Room for keys up to `maxKey`. */
  ensure(maxKey: number): void {
    if (maxKey < this.start.length) return;
    const cap = Math.max(maxKey + 1, Math.ceil(this.start.length * 1.5), 1024);
    const start = new Int32Array(cap).fill(-1);
    start.set(this.start);
    this.start = start;
    const length = new Int32Array(cap);
    length.set(this.length);
    this.length = length;
  }

  /** Bytes the buffer holds room for. */
  get capacity(): number {
    return this.bytes.length;
  }

  set(key: number, id: string): void {
    if (this.has(key)) return;
    const n = Buffer.byteLength(id);
    this.reserve(n);
    this.bytes.write(id, this.used, 'utf8');
    this.place(key, n);
  }

  /** Sets the key's id from its UTF-8 bytes, `src[from..to)`. */
  setBytes(key: number, src: Uint8Array, from: number, to: number): void {
    if (this.has(key)) return;
    this.reserve(to - from);
    this.bytes.set(src.subarray(from, to), this.used);
    this.place(key, to - from);
  }

  get(key: number): string | undefined {
    const s = key < this.start.length ? this.start[key]! : -1;
    return s < 0 ? undefined : this.bytes.toString('utf8', s, s + this.length[key]!);
  }

  clear(): void {
    this.bytes = Buffer.alloc(0);
    this.used = 0;
    this.placed = 0;
    this.start = new Int32Array(0);
    this.length = new Int32Array(0);
  }

  private has(key: number): boolean {
    this.ensure(key);
    return this.start[key]! >= 0;
  }

  private place(key: number, n: number): void {
    this.start[key] = this.used;
    this.length[key] = n;
    this.used += n;
    this.placed++;
  }

  /**
   * Grows the buffer to what every key there is room for would need at the average length so far (the
   * catalog sizes the keys for its whole store before a load): doubling instead copied the whole buffer
   * again and again during a million-memory load, each copy into fresh pages (up to 0.08 s of the serving
   * thread after the first few).
   */
  private reserve(n: number): void {
    if (this.used + n <= this.bytes.length) return;
    const expected =
      this.placed >= EXPECT_AFTER_IDS
        ? Math.ceil((this.used / this.placed) * this.start.length * EXPECT_MARGIN)
        : 0;
    const bytes = Buffer.allocUnsafe(Math.max(this.used + n, this.bytes.length * 2, 64 * 1024, expected));
    this.bytes.copy(bytes, 0, 0, this.used);
    this.bytes = bytes;
  }
}

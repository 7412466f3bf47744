import { CairnError, type NormalizedMemory, normalizeMemory } from '@cairn/core';
import type { RecordSink } from './stage-ports.js';

export type CaptureStatus = 'stored' | 'updated' | 'unchanged' | 'rejected';

export interface CaptureItemResult {
  /** Position in the input batch (0-based). */
  index: number;
  status: CaptureStatus;
  id?: string;
  namespace?: string;
  /** For `rejected`: what was wrong, naming the field. */
  error?: { code: string; message: string; field?: string };
}

export interface CaptureResult {
  items: CaptureItemResult[];
  counts: Record<CaptureStatus, number>;
  /** Store keys of every accepted item, for the stages downstream. */
  keys: number[];
}

/**
 * The capture stage: validates and normalises each memory, then writes every valid one in a single
 * transaction. A bad item is rejected on its own and never blocks its neighbours. When this returns,
 * every item marked stored/updated/unchanged is durable. `receipt` names the batch for a queued job, whose
 * retry then writes nothing and reports what the first attempt did.
 */
export function captureBatch(
  sink: RecordSink,
  inputs: readonly unknown[],
  now = Date.now(),
  receipt?: string,
): CaptureResult {
  const items: CaptureItemResult[] = [];
  const valid: Array<{ index: number; memory: NormalizedMemory }> = [];
  inputs.forEach((input, index) => {
    try {
      valid.push({ index, memory: normalizeMemory(input, now) });
    } catch (err) {
      const e = err instanceof CairnError ? err : new CairnError('INVALID_INPUT', String(err));
      items.push({ index, status: 'rejected', error: e.toJSON() });
    }
  });
  // Two copies of one id in a batch: the later one wins, as it would across two batches.
  const written = sink.write(
    valid.map((v) => v.memory),
    receipt === undefined ? {} : { receipt },
  );
  for (const [i, w] of written.entries()) {
    items.push({ index: valid[i]!.index, status: w.status, id: w.id, namespace: w.namespace });
  }
  items.sort((a, b) => a.index - b.index);
  const counts: Record<CaptureStatus, number> = { stored: 0, updated: 0, unchanged: 0, rejected: 0 };
  for (const it of items) counts[it.status]++;
  return { items, counts, keys: written.map((w) => w.key) };
}

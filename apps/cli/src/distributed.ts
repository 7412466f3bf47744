/**
 * The BullMQ transport, loaded only by a command that has REDIS_URL set. Importing bullmq and ioredis takes
 * about 0.3 s, a fifth of a one-shot `cairn search` on the embedded default, which never uses them.
 */
export function loadDistributed(): Promise<typeof import('@cairn/pipeline/distributed')> {
  return import('@cairn/pipeline/distributed');
}

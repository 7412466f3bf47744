import { asFactMemory, type CairnErrorCode, type FactFields, isCairnError } from '@cairn/core';
import { SingleBar } from 'cli-progress';
import { loadDistributed } from '../distributed.js';
import type { CliEnv } from '../env.js';
import { numberFlag } from '../flags.js';
import { byWriter, waitForVectors } from '../index-progress.js';
import { fileSize, readJsonl } from '../jsonl.js';
import { withEngine, withQueues } from '../open-engine.js';
import { EXIT, exitCodeFor, warn, writeJson } from '../output.js';

export interface IngestFlags {
  dataDir?: string;
  json?: boolean;
  batchSize: string;
  embed: boolean;
  progress?: boolean;
  /** Distributed mode: return once `stored` (SQLite commit) or once `queued` in Redis. */
  wait: 'stored' | 'queued';
}

export interface IngestSummary {
  file: string;
  read: number;
  stored: number;
  updated: number;
  unchanged: number;
  rejected: number;
  /** Distributed mode with --wait queued: accepted by Redis, not yet stored. */
  queued: number;
  /** `embedded` (one process) or `distributed` (through the capture queue; REDIS_URL set). */
  mode: 'embedded' | 'distributed';
  /** The first 100 rejections, with their line numbers. */
  errors: Array<{ line: number; code: string; message: string; field?: string }>;
  embedded: boolean;
  /**
   * Another process held the data folder's writer role (a `cairn serve`, a `cairn mcp`): this command
   * stored the memories beside it and waited for that writer to embed them. Null: this process did.
   */
  writer: string | null;
  /** False when that writer is a one-shot command, which embeds only its own writes (nothing was waited for). */
  writerEmbedsOthers: boolean;
  /** Memories stored but still without a vector when the command returned (a busy or stalled writer). */
  pending: number;
  /**
   * Ctrl-C: `storing` stopped reading after the batch being stored (every line before is stored; run the
   * same command again to go on); `embedding` left the wait for vectors (every line is stored; the folder's
   * next writer embeds the rest). Null: not interrupted.
   */
  interrupted: 'storing' | 'embedding' | null;
  /**
   * A write failed mid-file (a full disk, Redis lost): every line before `line` is stored (or accepted),
   * nothing from it on, and running the same command again goes on. Null: no write failed.
   */
  stopped: { line: number; code: string; message: string } | null;
  /** The whole command: reading and storing, then (unless --no-embed) embedding and indexing. */
  seconds: number;
  /** Lines read per second of the whole command, so a rate printed beside "indexed" includes indexing. */
  perSecond: number;
  /** Reading and storing alone; the rest of `seconds` waited for vectors and index files. */
  storedSeconds: number;
}

/** A line naming `slot` and `key` is a fact, as in the HTTP API and MCP: its id is derived from them. */
function asFact(value: unknown): unknown {
  return value && typeof value === 'object' && !Array.isArray(value)
    ? asFactMemory(value as FactFields)
    : value;
}

/** Files above this size get a progress bar. */
const PROGRESS_MIN_BYTES = 1_000_000;
const MAX_REPORTED_ERRORS = 100;

export async function ingestCommand(file: string, flags: IngestFlags, env: CliEnv): Promise<void> {
  const batchSize = numberFlag(flags.batchSize, 'batch-size', { min: 1, max: 50_000 });
  const size = fileSize(file);
  const showBar = flags.progress ?? (size !== null && size >= PROGRESS_MIN_BYTES);
  const bar = showBar
    ? new SingleBar({
        stream: process.stderr,
        format: 'ingest [{bar}] {percentage}% | {value}/{total} KiB | {lines} lines | {rate}/s',
        noTTYOutput: true,
        notTTYSchedule: 2000,
      })
    : null;
  const started = performance.now();
  const summary: IngestSummary = {
    file,
    read: 0,
    stored: 0,
    updated: 0,
    unchanged: 0,
    rejected: 0,
    queued: 0,
    mode: env.REDIS_URL ? 'distributed' : 'embedded',
    errors: [],
    embedded: false,
    writer: null,
    writerEmbedsOthers: true,
    pending: 0,
    interrupted: null,
    stopped: null,
    seconds: 0,
    perSecond: 0,
    storedSeconds: 0,
  };
  const reject = (line: number, code: string, message: string, field?: string) => {
    summary.rejected++;
    if (summary.errors.length < MAX_REPORTED_ERRORS)
      summary.errors.push(field ? { line, code, message, field } : { line, code, message });
    if (!flags.json) warn(`line ${line}: ${message}`);
  };

  /** Prints the summary: at the end, or when Ctrl-C leaves the wait for vectors. */
  const report = () => {
    summary.seconds = (performance.now() - started) / 1000;
    summary.perSecond = Math.round(summary.read / Math.max(summary.seconds, 1e-3));
    // Lines refused as they were read (bad JSON) come before those refused when their batch was written.
    summary.errors.sort((a, b) => a.line - b.line);
    // A failed write also carries the one error shape every command prints with --json.
    if (flags.json)
      writeJson(
        summary.stopped
          ? { ...summary, error: { code: summary.stopped.code, message: summary.stopped.message } }
          : summary,
      );
    else {
      const vectors = summary.stopped
        ? `; stopped at line ${summary.stopped.line} by the error below: every line before it is ${summary.mode === 'distributed' ? 'accepted' : 'stored'}, none from it on, and running the same command again goes on (stored lines come back unchanged)`
        : summary.interrupted === 'storing'
          ? `; interrupted after line ${lastLine}: every line up to it is ${summary.mode === 'distributed' ? 'accepted (stored, or queued with --wait queued)' : 'stored'}, and running the same command again goes on (stored lines come back unchanged)`
          : summary.interrupted === 'embedding'
            ? '; interrupted while waiting for vectors: every line is stored, and the next writer of the folder (cairn serve, mcp or ingest) embeds and indexes the rest'
            : !flags.embed
              ? ''
              : summary.writer
                ? `; ${byWriter(summary)}`
                : `; all embedded and indexed (stored in the first ${summary.storedSeconds.toFixed(2)} s)`;
      process.stdout.write(
        `read ${summary.read}, stored ${summary.stored}, updated ${summary.updated}, unchanged ${summary.unchanged}, ` +
          `${summary.mode === 'distributed' && summary.queued > 0 ? `queued ${summary.queued}, ` : ''}` +
          `rejected ${summary.rejected} in ${summary.seconds.toFixed(2)} s (${summary.perSecond}/s)${vectors}\n`,
      );
    }
    if (summary.stopped) {
      // The error itself, in the one shape, on stderr (stdout holds the summary, which carries it).
      warn(`cairn: error [${summary.stopped.code}]: ${summary.stopped.message}`);
      process.exitCode = exitCodeFor(summary.stopped.code as CairnErrorCode);
    } else if (summary.interrupted) process.exitCode = EXIT.interrupted;
    else if (summary.rejected > 0) process.exitCode = EXIT.partial;
  };
  // Ctrl-C used to end the command with no word of what was stored. The first now stops reading after the
  // batch being stored, or leaves the wait for vectors (nothing is lost: what is stored is committed, and
  // vectors are derived); a second ends the process at once.
  let phase: 'storing' | 'embedding' = 'storing';
  /** The file's line number last read (blank lines count, as in the per-line refusals). */
  let lastLine = 0;
  // Stops the reading at once, even while the input is idle (a pipe whose writer waits).
  const reading = new AbortController();
  const onInterrupt = () => {
    if (summary.interrupted) process.exit(EXIT.interrupted);
    summary.interrupted = phase;
    if (phase === 'storing') {
      reading.abort();
      warn(
        'cairn ingest: interrupted: storing the batch in hand, then stopping (Ctrl-C again to stop at once)',
      );
      return;
    }
    report();
    process.exit(EXIT.interrupted);
  };
  process.on('SIGINT', onInterrupt);

  type Item = {
    status: 'stored' | 'updated' | 'unchanged' | 'rejected' | 'queued';
    index: number;
    error?: { code: string; message: string; field?: string };
  };
  /** Reads the file in batches and hands each to `write`, tallying what came back per line. */
  const ingestFile = async (write: (values: unknown[]) => Promise<{ items: Item[] }>) => {
    let bytes = 0;
    bar?.start(Math.ceil((size ?? 0) / 1024), 0, { lines: 0, rate: 0 });
    let batch: Array<{ line: number; value: unknown }> = [];
    const flush = async () => {
      if (batch.length === 0) return;
      let res: { items: Item[] };
      try {
        res = await write(batch.map((b) => b.value));
      } catch (err) {
        throw new WriteStopped(batch[0]!.line, err);
      }
      for (const item of res.items) {
        const line = batch[item.index]!.line;
        if (item.status === 'rejected')
          reject(line, item.error!.code, item.error!.message, item.error!.field);
        else summary[item.status]++;
      }
      batch = [];
      const secs = (performance.now() - started) / 1000;
      bar?.update(Math.ceil(bytes / 1024), {
        lines: summary.read,
        rate: Math.round(summary.read / Math.max(secs, 1e-3)),
      });
    };
    try {
      for await (const l of readJsonl(
        file,
        (n) => {
          bytes += n;
        },
        reading.signal,
      )) {
        summary.read++;
        lastLine = l.line;
        if (l.error !== undefined) reject(l.line, 'INVALID_INPUT', l.error);
        else {
          try {
            batch.push({ line: l.line, value: asFact(l.value) });
          } catch (err) {
            if (!isCairnError(err)) throw err;
            reject(l.line, err.code, err.message, err.data.field);
          }
        }
        if (batch.length >= batchSize) await flush();
        if (summary.interrupted) break;
      }
      await flush();
    } finally {
      // The bar redraws on a timer: left running after a failed write (a full disk, a damaged file), it
      // kept the process alive after the error was printed, and the ingest never exited.
      bar?.stop();
    }
    summary.storedSeconds = (performance.now() - started) / 1000;
  };

  try {
    if (env.REDIS_URL) {
      // Distributed: the capture workers validate, store and enqueue embedding; this process never opens
      // the data folder.
      await withQueues(env, async (topology) => {
        const { CaptureProducer } = await loadDistributed();
        const producer = new CaptureProducer(topology, {
          wait: flags.wait,
          batchSize: Math.min(batchSize, 1000),
          onWaiting: (job, ms) =>
            warn(
              `cairn ingest: capture job ${job} not stored after ${Math.round(ms / 1000)} s: is a capture worker running (cairn worker --stages capture), and is Redis up? Still waiting (up to 300 s).`,
            ),
        });
        try {
          await ingestFile((values) => producer.enqueue(values));
        } finally {
          await producer.close();
        }
      });
    } else {
      // Beside a running writer (`cairn serve`, `cairn mcp`) this process stores as its follower and the writer
      // embeds and indexes what it stored; should the writer go, this process takes its role over.
      await withEngine(
        flags.dataDir,
        env,
        async (engine) => {
          const keys: number[] = [];
          await ingestFile(async (values) => {
            const res = engine.ingest(values, { embed: flags.embed });
            for (const key of res.keys) keys.push(key);
            return res;
          });
          if (!flags.embed || summary.interrupted) return;
          // Stored memories are already durable and searchable lexically; this waits for their vectors.
          phase = 'embedding';
          // Known before the wait, so that a Ctrl-C during it reports who embeds and what is left.
          const { role, writer } = engine.writerRole;
          if (role === 'follower') summary.writer = writer;
          summary.pending = new Set(keys).size;
          const wait = await waitForVectors(
            engine,
            keys,
            () => engine.drain(5, { scoreCommonWords: true }),
            showBar,
            (pending) => {
              summary.pending = pending;
            },
          );
          summary.writer = wait.writer;
          summary.writerEmbedsOthers = wait.writerEmbedsOthers;
          summary.pending = wait.pending;
          summary.embedded = wait.pending === 0;
        },
        { follow: true },
      );
    }
  } catch (err) {
    // A named failure (a full disk, Redis lost) mid-file: said with the count of what was stored before it,
    // which the error alone ("nothing of this write was stored") made sound like the whole file.
    if (!(err instanceof WriteStopped) || !isCairnError(err.cause))
      throw err instanceof WriteStopped ? err.cause : err;
    summary.stopped = { line: err.line, code: err.cause.code, message: err.cause.message };
  }

  process.off('SIGINT', onInterrupt);
  report();
}

/** A batch's write failed: what was stored before it stands, and the summary says where it stopped. */
class WriteStopped extends Error {
  constructor(
    readonly line: number,
    override readonly cause: unknown,
  ) {
    super(`the write of the batch from line ${line} failed`);
  }
}

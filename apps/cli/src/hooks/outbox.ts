import { randomUUID } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { MemoryWrite } from '@cairn/api-contract';
import type { HookEvent, HookPayload } from './payload.js';

/**
 * What a hook could not hand to a Cairn API that did not answer: the memory it would have written (a tool
 * call's observation), or the redacted payload of a summary, which needs the server's observations to be
 * made. Never a secret: both are redacted before they are kept.
 */
export interface OutboxEntry {
  /** The API it was meant for: only a hook talking to the same URL sends it. */
  api: string;
  /** When the hook met the failure (ISO 8601). */
  at: string;
  event: HookEvent;
  namespace: string;
  /** The project folder (a summary's title is made relative to it). */
  base: string;
  memory?: MemoryWrite;
  payload?: HookPayload;
}

/** Entries a hook took to send; `done` (once) returns the unsent ones and ends the claim. */
export interface OutboxBatch {
  entries: OutboxEntry[];
  done(unsent: readonly OutboxEntry[]): void;
}

/** The outbox refuses more past this size: a server gone for days must not fill the disk. */
const MAX_OUTBOX_BYTES = 16 * 1024 * 1024;
/** A claim older than this belongs to a hook that died while sending (Claude Code kills slow hooks). */
const ABANDONED_CLAIM_MS = 60_000;
const FILE = 'hooks-outbox.jsonl';
const CLAIM = `${FILE}.claim-`;

/**
 * Whether a claim (`hooks-outbox.jsonl.claim-<pid>-<ms>-…`) is a dead hook's: its process is gone and it is a
 * minute old, or it is ten minutes old whatever its pid says (a reused pid, another host's home folder).
 * A name without them (an older Cairn's claim) counts as abandoned.
 */
function abandoned(name: string): boolean {
  const m = /^hooks-outbox\.jsonl\.claim-(\d+)-(\d{13})-/.exec(name);
  if (!m) return true;
  const age = Date.now() - Number(m[2]);
  if (age >= 10 * ABANDONED_CLAIM_MS) return true;
  if (age < ABANDONED_CLAIM_MS) return false;
  try {
    process.kill(Number(m[1]), 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * The hooks' outbox for a Cairn API that is down: entries appended by the hook that failed, sent by the next
 * hook that reaches the same API (oldest first; the ids are the hook's own, so sending one twice stores it
 * once). Hooks run concurrently: a sender claims the whole file by renaming it, so no two send the same
 * entries, and puts back what it did not send. It lives in the user's state folder
 * (`$XDG_STATE_HOME/cairn`, else `~/.local/state/cairn`), beside the hooks' log for API mode: there is no
 * data folder to hold either.
 */
export class HookOutbox {
  constructor(readonly dir: string) {}

  /** The user's outbox: `$XDG_STATE_HOME/cairn`, else `~/.local/state/cairn`. */
  static forUser(env: Record<string, string | undefined>): HookOutbox {
    const state = env.XDG_STATE_HOME?.trim() || join(homedir(), '.local', 'state');
    return new HookOutbox(join(state, 'cairn'));
  }

  private get file(): string {
    return join(this.dir, FILE);
  }

  /** Keeps `entry`; returns how many wait, or null when the outbox is full (the entry is dropped). */
  add(entry: OutboxEntry): number | null {
    this.ensureDir();
    const line = `${JSON.stringify(entry)}\n`;
    const size = existsSync(this.file) ? statSync(this.file).size : 0;
    if (size + Buffer.byteLength(line) > MAX_OUTBOX_BYTES) return null;
    // One write of one line, appended: concurrent hooks' lines do not interleave. The user's own: tool
    // inputs and outputs, even redacted, are not for other local users.
    appendFileSync(this.file, line, { mode: 0o600 });
    return this.count();
  }

  /**
   * Entries waiting, for every API: the outbox's lines, counted without parsing them (every hook runs this
   * while an API is down, and a full outbox is 16 MiB of JSON). A line cut short by a full disk is counted
   * though `take` will drop it.
   */
  count(): number {
    let bytes: Buffer;
    try {
      bytes = readFileSync(this.file);
    } catch {
      return 0;
    }
    let lines = 0;
    for (let at = bytes.indexOf(0x0a); at !== -1; at = bytes.indexOf(0x0a, at + 1)) lines++;
    // An append cut before its newline is still an entry's worth of text.
    if (bytes.length > 0 && bytes[bytes.length - 1] !== 0x0a) lines++;
    return lines;
  }

  /**
   * Takes the entries for `api` out of the outbox, oldest first; entries for other APIs stay. The claim
   * stays on disk until `done` is called with what was not sent: a hook killed mid-send leaves it to be
   * adopted by a later hook (which may send an entry twice; the ids make that harmless).
   */
  take(api: string): OutboxBatch {
    if (!existsSync(this.dir)) return { entries: [], done: () => {} };
    // The claim's name carries its hook's pid and the time it was made: a rename keeps the outbox's mtime
    // (its last append, minutes old once the API was down a while), so the mtime cannot date a claim.
    const claim = join(this.dir, `${CLAIM}${process.pid}-${Date.now()}-${randomUUID()}`);
    const claimed: string[] = [];
    try {
      renameSync(this.file, claim);
      claimed.push(claim);
    } catch {
      // No outbox, or another hook claimed it a moment ago.
    }
    // Claims of hooks that died mid-send are this hook's to finish.
    for (const name of readdirSync(this.dir)) {
      if (!name.startsWith(CLAIM)) continue;
      const path = join(this.dir, name);
      if (claimed.includes(path)) continue;
      try {
        if (!abandoned(name)) continue;
        const mine = `${claim}-adopted-${claimed.length}`;
        renameSync(path, mine);
        claimed.push(mine);
      } catch {
        // Adopted by another hook meanwhile.
      }
    }
    if (claimed.length === 0) return { entries: [], done: () => {} };
    const entries = claimed.flatMap((path) => this.read(path));
    const mine = entries
      .filter((e) => e.api === api)
      .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
    // Other APIs' entries go back at once; the claim keeps only this hook's (written before the old
    // claims go, so a kill between the two leaves copies, never a loss).
    const own = `${claim}-own`;
    writeFileSync(own, mine.map((e) => `${JSON.stringify(e)}\n`).join(''), { mode: 0o600 });
    this.putBack(entries.filter((e) => e.api !== api));
    for (const path of claimed) rmSync(path, { force: true });
    let finished = false;
    return {
      entries: mine,
      done: (unsent) => {
        if (finished) return;
        finished = true;
        this.putBack(unsent);
        rmSync(own, { force: true });
      },
    };
  }

  /** Returns entries to the outbox (a send that stopped part-way). */
  putBack(entries: readonly OutboxEntry[]): void {
    if (entries.length === 0) return;
    this.ensureDir();
    appendFileSync(this.file, entries.map((e) => `${JSON.stringify(e)}\n`).join(''), { mode: 0o600 });
  }

  /** The state folder, the user's only (mode 0700 when this creates it). */
  ensureDir(): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
  }

  private read(path: string): OutboxEntry[] {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      return [];
    }
    const out: OutboxEntry[] = [];
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      try {
        const e = JSON.parse(line) as OutboxEntry;
        if (typeof e.api === 'string' && typeof e.event === 'string') out.push(e);
      } catch {
        // A line cut short (the disk filled mid-append): dropped, the others are whole.
      }
    }
    return out;
  }
}

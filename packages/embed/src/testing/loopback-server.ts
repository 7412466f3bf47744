import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * How a fake server behaves:
 * - `up`: answers like the real server.
 * - `down`: nothing listens on the port (connection refused); `up` again listens on the same port.
 * - `busy`: the server's overload answer (Ollama 503, OpenAI 429 with rate-limit headers).
 * - `error500`: the server's internal-error answer.
 * - `hang`: accepts the request and never answers, until the client gives up or the fake goes down.
 */
export type FakeMode = 'up' | 'down' | 'busy' | 'error500' | 'hang';

/** One request that reached a fake, in arrival order. */
export interface FakeRequest<Body = unknown> {
  method: string;
  /** Path with query, e.g. `/api/embed`. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body; undefined when it was not JSON. */
  body: Body | undefined;
  /** The status the fake answered with; 0 while a `hang` request is held. */
  status: number;
}

/** An answer: an object body is sent as JSON, a string as it is. */
export interface FakeReply {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

/** What setMode may change along with the mode. */
export interface SetModeOptions {
  /** Headers of the `busy` answer, replacing the fake's defaults (e.g. only `retry-after: 2`). */
  headers?: Record<string, string>;
}

/** A fake embedding server on 127.0.0.1 with a port chosen by the OS. */
export interface FakeServer<Body> {
  /** The base URL to give the embedder (`http://127.0.0.1:<port>`, plus `/v1` for OpenAI). */
  readonly url: string;
  readonly port: number;
  readonly mode: FakeMode;
  /** Every request that reached the server, failed ones included; `.length` counts them. */
  readonly requests: readonly FakeRequest<Body>[];
  /** Switches behaviour; `down` resolves once the port refuses connections, `up` once it accepts them. */
  setMode(mode: FakeMode, opts?: SetModeOptions): Promise<void>;
  /** Stops listening and drops open connections. Safe to call twice. */
  close(): Promise<void>;
}

/** What a fake's handler sees of a request. */
export interface HandlerRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON, or undefined. */
  body: unknown;
  /** True when the body was present but not JSON. */
  invalidJson: boolean;
}

/** Answers one request in a mode other than `down` and `hang`; `busyHeaders` is what setMode last set. */
export type FakeHandler = (
  req: HandlerRequest,
  mode: 'up' | 'busy' | 'error500',
  busyHeaders: Record<string, string> | undefined,
) => FakeReply;

/** Re-listening on the same port can race the OS (or, rarely, another process); give it this long. */
const RELISTEN_ATTEMPTS = 40;
const RELISTEN_PAUSE_MS = 25;

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port }, () => {
      server.off('error', reject);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    // close() alone waits for keep-alive and held (`hang`) connections; a down server has none.
    server.closeAllConnections();
  });
}

/**
 * Starts the shared part of a fake: listening, modes, the request log. `pathPrefix` is appended to the
 * URL handed to clients.
 */
export async function startLoopbackServer<Body>(
  handler: FakeHandler,
  pathPrefix = '',
): Promise<FakeServer<Body>> {
  const requests: FakeRequest<Body>[] = [];
  let mode: FakeMode = 'up';
  let busyHeaders: Record<string, string> | undefined;
  let server: Server | null = null;
  let closed = false;

  const makeServer = () =>
    createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        let invalidJson = false;
        if (raw !== '') {
          try {
            body = JSON.parse(raw);
          } catch {
            invalidJson = true;
          }
        }
        const entry: FakeRequest<Body> = {
          method: req.method ?? 'GET',
          path: req.url ?? '/',
          headers: req.headers,
          body: body as Body | undefined,
          status: 0,
        };
        requests.push(entry);
        if (mode === 'hang') return;
        const reply = handler(
          { method: entry.method, path: entry.path, headers: req.headers, body, invalidJson },
          mode === 'busy' || mode === 'error500' ? mode : 'up',
          busyHeaders,
        );
        entry.status = reply.status;
        const isText = typeof reply.body === 'string';
        const payload = isText ? (reply.body as string) : JSON.stringify(reply.body);
        res.writeHead(reply.status, {
          'content-type': isText ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8',
          ...reply.headers,
        });
        res.end(payload);
      });
    });

  server = makeServer();
  const port = await listen(server, 0);

  return {
    url: `http://127.0.0.1:${port}${pathPrefix}`,
    port,
    get mode() {
      return mode;
    },
    requests,
    async setMode(next, opts = {}) {
      if (closed) throw new Error('fake server is closed');
      if (opts.headers) busyHeaders = opts.headers;
      if (next === 'down' && server) {
        const s = server;
        server = null;
        mode = next;
        await closeServer(s);
        return;
      }
      if (next !== 'down' && !server) {
        const s = makeServer();
        for (let attempt = 1; ; attempt++) {
          try {
            await listen(s, port);
            break;
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= RELISTEN_ATTEMPTS)
              throw err;
            await sleep(RELISTEN_PAUSE_MS);
          }
        }
        server = s;
      }
      mode = next;
    },
    async close() {
      if (closed) return;
      closed = true;
      const s = server;
      server = null;
      if (s) await closeServer(s);
    },
  };
}

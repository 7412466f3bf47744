import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { CairnError } from '@cairn/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * The request line and headers may hold this many bytes. Node's default (16 KiB) refused the documented
 * 4,096-character `GET /v1/timeline?query=` once the query was not ASCII: percent-encoded UTF-8 takes up
 * to 9 bytes a character. @defaultValue 64 KiB
 */
export const MAX_HEADER_BYTES = 64 * 1024;

/**
 * A body announced larger than the limit is still read, and thrown away, up to this many bytes, before the
 * 413 goes out: a client that writes its whole body before reading (Node's http, most SDKs) would otherwise
 * see the connection reset (EPIPE) and never the answer. Larger bodies are refused at once. @defaultValue 64 MiB
 */
export const DRAIN_OVERSIZED_BODY_BYTES = 64 * 1024 * 1024;

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (a request line or headers too large, a
 * malformed request line, conflicting Content-Length headers), answered in Cairn's error shape rather than
 * Fastify's `{error, message, statusCode}`. The connection is closed: the parser cannot go on.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, error] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [
          431,
          new CairnError(
            'PAYLOAD_TOO_LARGE',
            `the request line and headers exceed ${MAX_HEADER_BYTES} bytes; send long queries in a POST body`,
            { field: 'url' },
          ),
        ]
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, new CairnError('INVALID_INPUT', 'the request was not received in time')]
        : [400, new CairnError('INVALID_INPUT', `malformed HTTP request (${err.code ?? err.message})`)];
  const body = JSON.stringify({ error: error.toJSON() });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nconnection: close\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

/** A request body's stream ended because the client closed the connection (Node's `aborted`, ECONNRESET). */
function isClientAbort(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null;
  return e?.code === 'ECONNRESET' || e?.message === 'aborted';
}

/** Whether `text` parses as JSON at all (so a refusal of it was for a forbidden key, not its syntax). */
function isPlainJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const bodyEndedEarly = () =>
  new CairnError('INVALID_INPUT', 'the body ended early: the client closed the connection', {
    field: 'body',
  });

/**
 * Bodies: an empty body sent as application/json (a DELETE from a client that always sets the header)
 * counts as no body; a body over `limit` is drained (see DRAIN_OVERSIZED_BODY_BYTES) and refused with 413,
 * whether its length was announced (refused before routing) or it came chunked (refused once it passes the
 * limit). Malformed JSON is refused by Fastify's own parser, which guards against prototype poisoning.
 */
export function installBodyHandling(app: FastifyInstance, limit: number): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  const tooLarge = () =>
    new CairnError('PAYLOAD_TOO_LARGE', 'the request body is larger than the server accepts', {
      field: 'body',
    });
  app.removeContentTypeParser('application/json');
  // Fastify read text/plain bodies as strings, which then failed as "value must be object, got string";
  // it is what fetch() sends a JSON.stringify'd body as by default, so a body sent so gets the media-type
  // error instead. No body with the header (fetch's DELETE with body '') counts as no body, as for JSON.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('text/plain', { parseAs: 'string' }, (_req, body, done) => {
    if ((body as string).trim() === '') return done(null, undefined);
    done(
      new CairnError('INVALID_INPUT', 'send the body as application/json', { field: 'content-type' }),
      undefined,
    );
  });
  app.addContentTypeParser('application/json', (req, payload, done) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (err: Error | null, value?: unknown) => {
      if (settled) return;
      settled = true;
      done(err, value);
    };
    payload.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else if (size > DRAIN_OVERSIZED_BODY_BYTES) payload.destroy();
    });
    payload.on('end', () => {
      if (size > limit) return settle(tooLarge());
      const body = Buffer.concat(chunks).toString('utf8');
      if (body.trim() === '') return settle(null, undefined);
      parseJson(req, body, (err, value) => {
        // Valid JSON refused for a prototype-poisoning key was reported as "not valid JSON".
        if (err && isPlainJson(body))
          return settle(
            new CairnError(
              'INVALID_INPUT',
              'a body may not use the key "__proto__", nor "constructor" holding a "prototype"',
              { field: 'body' },
            ),
          );
        settle(err, value);
      });
    });
    payload.on('close', () => settle(size > limit ? tooLarge() : bodyEndedEarly()));
    payload.on('error', (err) => settle(isClientAbort(err) ? bodyEndedEarly() : err));
  });
  app.addHook('onRequest', async (req: FastifyRequest) => {
    const announced = Number(req.headers['content-length']);
    if (!(announced > limit)) return;
    if (announced <= DRAIN_OVERSIZED_BODY_BYTES) {
      for await (const _chunk of req.raw) {
        // discarded: only reading it lets the client finish writing and then read the answer
      }
    }
    throw tooLarge();
  });
}

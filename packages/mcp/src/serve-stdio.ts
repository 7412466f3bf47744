import type { Readable, Writable } from 'node:stream';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

export interface StdioSession {
  /** Settles once the connection is over: the client closed stdin, stdout broke, or close() was called. */
  closed: Promise<void>;
  close(): Promise<void>;
}

export interface StdioStreams {
  /** @defaultValue process.stdin */
  stdin?: Readable;
  /** @defaultValue process.stdout */
  stdout?: Writable;
}

/**
 * Serves `server` over stdio (newline-delimited JSON-RPC). The SDK's transport does not notice the client
 * going away, so the end of stdin and a broken stdout (EPIPE) close the session here; the caller awaits
 * `closed` and then releases what the server used.
 */
export async function serveStdio(server: McpServer, streams: StdioStreams = {}): Promise<StdioSession> {
  const stdin = streams.stdin ?? process.stdin;
  const stdout = streams.stdout ?? process.stdout;
  let settle!: () => void;
  const closed = new Promise<void>((r) => {
    settle = r;
  });
  server.server.onclose = () => settle();
  const close = async () => {
    stdin.off('end', onGone);
    stdout.off('error', onGone);
    await server.close();
    settle();
  };
  const onGone = () => void close();
  stdin.once('end', onGone);
  stdout.once('error', onGone);
  await server.connect(new StdioServerTransport(stdin, stdout));
  return { closed, close };
}

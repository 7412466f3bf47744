import { existsSync } from 'node:fs';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

/** Where the web explorer is served. */
export const EXPLORER_PREFIX = '/ui';

/**
 * What a browser may load on an explorer page: its own scripts, styles and API, nothing from any other
 * origin. The page needs no more (no CDN, no web font), so the browser itself enforces that it asks for
 * no more.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Serves the built web explorer (apps/explorer/dist: index.html and hashed assets) at /ui/. The folder is
 * given by the caller (the CLI knows where the app was built or installed), so this package never depends
 * on the app. The files are public like /docs: the page loads without a key and every data call it makes
 * goes to the /v1 routes with the key the user types, under the same authentication as any client.
 * Returns false when the folder holds no built explorer.
 */
export async function registerExplorer(app: FastifyInstance, dir: string): Promise<boolean> {
  if (!existsSync(join(dir, 'index.html'))) return false;
  await app.register(async (ui) => {
    await ui.register(fastifyStatic, {
      root: dir,
      prefix: EXPLORER_PREFIX,
      // Without its trailing slash the prefix also answers /ui with a redirect to /ui/, so the page's
      // relative asset and API URLs resolve under it.
      redirect: true,
      index: 'index.html',
      // Another registration (the docs' swagger-ui) may already decorate the reply.
      decorateReply: false,
      schemaHide: true,
      dotfiles: 'deny',
      setHeaders: (reply, path) => {
        reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
        reply.header('x-content-type-options', 'nosniff');
        reply.header('referrer-policy', 'no-referrer');
        // Vite names assets by content hash: they never change. index.html must be re-read on each visit
        // so that a new build's assets are picked up.
        reply.header(
          'cache-control',
          path.includes('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
        );
      },
      cacheControl: false,
    });
  });
  return true;
}

import {
  BatchSearchRequestSchema,
  BatchSearchResponseSchema,
  ContextRequestSchema,
  ContextResponseSchema,
  DeleteResponseSchema,
  FederatedSearchRequestSchema,
  FederatedSearchResponseSchema,
  GetRequestSchema,
  GetResponseSchema,
  httpStatusOf,
  SearchRequestSchema,
  SearchResponseSchema,
  StatsResponseSchema,
  TimelineQuerySchema,
  TimelineResponseSchema,
  WriteRequestSchema,
  WriteResponseSchema,
} from '@cairn/api-contract';
import { CairnError, isCairnError, NamespaceSchema, withDefaults, zodToCairnError } from '@cairn/core';
import { type MemoryService, NamespaceAccess } from '@cairn/service';
import fastifyRateLimit from '@fastify/rate-limit';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiKeys } from './api-keys.js';
import { ERROR_RESPONSES } from './error-responses.js';
import { registerExplorer } from './explorer-static.js';
import { type QueueProbe, registerHealthRoutes } from './health-routes.js';
import { registerHygieneRoutes, registerSpaceRoutes } from './operator-routes.js';
import { ServerMetrics } from './server-metrics.js';
import { clientErrorHandler, installBodyHandling, MAX_HEADER_BYTES } from './transport-errors.js';

export interface HttpServerOptions {
  service: MemoryService;
  /** API keys; null switches auth off, which is refused unless `host` is a loopback address. */
  keys: ApiKeys | null;
  /** The address the server will bind, checked against `keys: null`. @defaultValue '127.0.0.1' */
  host: string;
  /** Requests per key (or per IP without a key) per minute. @defaultValue 6_000 */
  rateLimitPerMinute: number;
  /**
   * How long a client has to send a whole request, headers and body (ms); then 408 and the connection
   * closes. Without it a body sent a byte every few seconds held its connection for good, and a few
   * hundred such clients, no key needed, took every descriptor the server had. @defaultValue 60_000
   */
  requestTimeoutMs: number;
  /** Distributed mode: Redis reachability for /readyz, and jobs and workers per queue for /metrics and /readyz. */
  queues?: QueueProbe;
  /** Fastify's logger. @defaultValue false */
  logger: boolean;
  /**
   * Told of every error answered as INTERNAL (the client sees only "internal error"), so the operator's
   * log has what happened. @defaultValue Fastify's logger (silent unless `logger` is on)
   */
  onInternalError?: (err: unknown, route: string) => void;
  /** The built web explorer's folder (index.html and assets), served at /ui/; none: no explorer. */
  explorerDir?: string;
}

const DeleteQuerySchema = z.strictObject({ namespace: NamespaceSchema });

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

declare module 'fastify' {
  interface FastifyRequest {
    access: NamespaceAccess;
  }
}

/**
 * Refuses to serve without auth (`keys` null) on anything but a loopback address. Exported so that `cairn
 * serve` asks before it opens (and so creates) a data folder for a server that would be refused.
 */
export function assertAuthAllowed(keys: ApiKeys | null, host: string): void {
  if (keys === null && !LOOPBACK.has(host))
    throw new CairnError(
      'INVALID_INPUT',
      `auth can be switched off only on a loopback address, not ${host}; set CAIRN_API_KEYS`,
      { field: 'host' },
    );
}

function errorBody(e: CairnError) {
  return { error: e.toJSON() };
}

/** Fastify's own errors (body parsing, limits, rate limiting) in Cairn's error shape. */
function toCairnError(err: unknown): CairnError {
  if (isCairnError(err)) return err;
  const e = err as { code?: string; statusCode?: number; message?: string };
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new CairnError('PAYLOAD_TOO_LARGE', 'the request body is larger than the server accepts', {
        field: 'body',
      });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new CairnError('INVALID_INPUT', `malformed JSON body: ${e.message}`, { field: 'body' });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new CairnError('INVALID_INPUT', 'send the body as application/json', { field: 'content-type' });
  }
  if (e instanceof SyntaxError)
    return new CairnError('INVALID_INPUT', `malformed JSON body: ${e.message}`, { field: 'body' });
  if (e.statusCode === 429) return new CairnError('RATE_LIMITED', e.message ?? 'rate limit exceeded');
  if (e.statusCode === 404) return new CairnError('NOT_FOUND', e.message ?? 'no such route');
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500)
    return new CairnError('INVALID_INPUT', e.message ?? 'bad request');
  return new CairnError('INTERNAL', 'internal error');
}

/**
 * A Host header naming this machine's loopback interface, any port: localhost and *.localhost (which
 * browsers resolve to loopback themselves, never through DNS), 127.x.x.x, [::1] and [::ffff:127.x.x.x].
 */
function isLoopbackHost(host: string): boolean {
  const bracketed = host.startsWith('[');
  const name = (bracketed ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d*$/, ''))
    .toLowerCase()
    .replace(/\.$/, '');
  const v4 = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
  if (bracketed) {
    const v6 = name.slice(1, -1);
    return v6 === '::1' || v6 === '0:0:0:0:0:0:0:1' || (v6.startsWith('::ffff:') && v4.test(v6.slice(7)));
  }
  return name === 'localhost' || name.endsWith('.localhost') || v4.test(name);
}

/**
 * Refuses query parameters a route does not take, as unknown body fields are: `/v1/stats?namespace=x`
 * was answered for every namespace, a typo for a filter that silently filtered nothing.
 */
function refuseUnknownQuery(schema: unknown) {
  const shape = (schema as { shape?: Record<string, unknown> } | undefined)?.shape;
  const allowed = new Set(shape ? Object.keys(shape) : []);
  return async (req: FastifyRequest) => {
    const unknown = Object.keys((req.query as Record<string, unknown> | undefined) ?? {}).filter(
      (k) => !allowed.has(k),
    );
    if (unknown.length === 0) return;
    const takes = allowed.size > 0 ? `takes ${[...allowed].join(', ')}` : 'takes no query parameters';
    throw new CairnError(
      'INVALID_INPUT',
      `unknown query parameter ${unknown.map((k) => `"${k}"`).join(', ')}: this route ${takes}`,
      { field: unknown[0]! },
    );
  };
}

const bearer = (req: FastifyRequest) => {
  // The scheme is case-insensitive (RFC 9110 §11.1).
  const m = /^bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
  return m?.[1]?.trim();
};

/**
 * The HTTP API. Bodies are validated once, by the service, against the same zod schemas the OpenAPI
 * document at /docs is generated from (Fastify's own validation is off so errors name fields the same way
 * over HTTP and MCP). Responses are plain JSON.stringify: the schemas document them, the service's types
 * guarantee them.
 */
export async function createHttpServer(
  options: Partial<HttpServerOptions> & Pick<HttpServerOptions, 'service' | 'keys'>,
): Promise<FastifyInstance> {
  const o = withDefaults<HttpServerOptions>(
    {
      host: '127.0.0.1',
      rateLimitPerMinute: 6_000,
      requestTimeoutMs: 60_000,
      logger: false,
    } as HttpServerOptions,
    options,
  );
  assertAuthAllowed(o.keys, o.host);
  const { service } = o;
  const metrics = new ServerMetrics(service, o.queues?.depths);
  const app = Fastify({
    logger: o.logger,
    bodyLimit: service.limits.maxBodyBytes,
    // Node refuses an HTTP/1.1 request without a Host header with an empty 400 before Fastify sees it; the
    // hook below refuses it in the error shape instead.
    http: {
      maxHeaderSize: MAX_HEADER_BYTES,
      requireHostHeader: false,
      // Node reads the request timeout when it creates the server (set afterwards, as Fastify's own option
      // does, it is ignored: measured on Node 20), and looks for requests past it this often (30 s by
      // default, half again the timeout).
      requestTimeout: o.requestTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.round(o.requestTimeoutMs / 4))),
    },
    requestTimeout: o.requestTimeoutMs,
    clientErrorHandler,
    // Memory ids may be 256 characters (fact ids are derived from slot and key).
    routerOptions: { maxParamLength: 1_024 },
    // Router-level errors (a bad percent-encoding, say) in Cairn's error shape too.
    frameworkErrors: (err, _req, reply) => {
      const body = errorBody(
        new CairnError('INVALID_INPUT', `bad request URL: ${err.message}`, { field: 'url' }),
      );
      void (reply as FastifyReply).code(400).type('application/json').send(JSON.stringify(body));
    },
  });
  installBodyHandling(app, service.limits.maxBodyBytes);
  app.setValidatorCompiler(() => (data) => ({ value: data }));
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  app.setErrorHandler((err, req, reply) => {
    // Decided by the socket, not the error's code: an ECONNRESET from a backend (Redis, an embedder) is a
    // fault to report, a client that hung up mid-request is not.
    const e =
      req.raw.aborted || req.raw.socket?.destroyed
        ? new CairnError('INVALID_INPUT', 'the client closed the connection mid-request', { field: 'body' })
        : toCairnError(err);
    if (e.code === 'INTERNAL') {
      if (o.onInternalError) o.onInternalError(err, `${req.method} ${req.routeOptions.url ?? req.url}`);
      else app.log.error(err);
    }
    const retryAfter =
      (err as { headers?: Record<string, string> }).headers?.['retry-after'] ?? retryAfterOf(e);
    if (retryAfter) reply.header('retry-after', retryAfter);
    return reply.code(httpStatusOf(e.code)).type('application/json').send(errorBody(e));
  });
  // Every route's method and path, so a request with the wrong method is told which ones the path takes.
  const routes: Array<{ methods: string[]; path: RegExp }> = [];
  app.addHook('onRoute', (route) => {
    // Parameters match one segment, a wildcard (the explorer's `/ui/*`) anything; the rest literally.
    const pattern = route.url
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_]\w*/g, '[^/]+'))
      .join('.*');
    routes.push({ methods: [route.method].flat().map(String), path: new RegExp(`^${pattern}$`) });
  });
  const methodsOn = (path: string) => [
    ...new Set(routes.filter((r) => r.path.test(path)).flatMap((r) => r.methods)),
  ];
  app.setNotFoundHandler((req, reply) => {
    const raw = req.url.split('?')[0] ?? req.url;
    // Matched as the router matched it: percent-decoded (`/v1/st%61ts` is /v1/stats).
    let path = raw;
    try {
      path = decodeURI(raw);
    } catch {
      // A malformed escape names no route: matched as sent.
    }
    const allowed = methodsOn(path);
    // No route of the path, or one of its method that found nothing (a missing file under /ui/*): a 404.
    if (allowed.length === 0 || allowed.includes(req.method)) {
      // Routes take no trailing slash: a client that added one is told where the route is.
      const bare = path.length > 1 && path.endsWith('/') ? path.replace(/\/+$/, '') : null;
      const hint =
        bare && methodsOn(bare).length > 0 ? ` (the route is ${bare}, without the trailing slash)` : '';
      return reply
        .code(404)
        .send(errorBody(new CairnError('NOT_FOUND', `no route ${req.method} ${raw}${hint}`)));
    }
    // A path that exists, asked with another method: 405, and `Allow` lists what it takes (RFC 9110, 15.5.6).
    const takes = allowed.filter((m) => m !== 'HEAD');
    return reply
      .code(405)
      .header('allow', allowed.join(', '))
      .send(
        errorBody(
          new CairnError(
            'METHOD_NOT_ALLOWED',
            `${req.method} is not allowed on ${raw}: it takes ${takes.join(', ')}`,
          ),
        ),
      );
  });

  // HTTP/1.1 requires a Host header (RFC 9112, section 3.2); HTTP/1.0 does not.
  app.addHook('onRequest', async (req) => {
    if (req.headers.host === undefined && req.raw.httpVersion !== '1.0')
      throw new CairnError('INVALID_INPUT', 'an HTTP/1.1 request needs a Host header', { field: 'host' });
  });

  // Without keys a server answers anyone who can reach it: that is only the local machine (see above),
  // unless a web page's host name is rebound to 127.0.0.1 (DNS rebinding). Its requests name that host:
  // refused, so a page the user visits cannot read or write their memories.
  if (o.keys === null)
    app.addHook('onRequest', async (req) => {
      const host = req.headers.host;
      if (host === undefined || isLoopbackHost(host)) return;
      throw new CairnError(
        'UNAUTHORIZED',
        `auth is off, so only requests addressed to this machine (localhost, 127.0.0.1, [::1]) are served, not to ${JSON.stringify(host)}; set CAIRN_API_KEYS to serve other host names`,
        { field: 'host' },
      );
    });

  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    metrics.requests.inc({ method: req.method, route, status: reply.statusCode });
    metrics.latency.observe({ method: req.method, route }, reply.elapsedTime / 1000);
  });

  await app.register(fastifySwagger, {
    openapi: {
      info: {
        title: 'Cairn memory API',
        version: '0.1.0',
        description:
          'Hybrid (BM25 + vector) memory for AI agents. Progressive disclosure: search returns a compact index, ' +
          'timeline shows the neighbourhood of one memory, memories/get returns full records; every layer takes ' +
          'max_tokens and reports the tokens it used.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
    // Schemas with a .meta({id}) become named components the paths refer to.
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(fastifySwaggerUi, {
    routePrefix: '/docs',
    // Never framed: a page framing a local server's docs could make a click "Try it out / Execute".
    uiHooks: {
      onRequest: (_req, reply, done) => {
        reply.header('x-frame-options', 'DENY');
        reply.header('content-security-policy', "frame-ancestors 'none'");
        reply.header('x-content-type-options', 'nosniff');
        done();
      },
    },
  });

  // Authentication and the rate limit apply to the API routes only; health, metrics and docs stay open.
  await app.register(async (api) => {
    // Before authentication, so that key guessing is rate limited too.
    await api.register(fastifyRateLimit, {
      max: o.rateLimitPerMinute,
      timeWindow: 60_000,
      // A known key is limited on its own; anything else (no key, a wrong one) by the client's address,
      // so guessing a new key on every try does not get a fresh allowance each time.
      keyGenerator: (req) => {
        const key = bearer(req);
        return key !== undefined && o.keys?.get(key) ? `key:${key}` : `ip:${req.ip}`;
      },
      errorResponseBuilder: (_req, ctx) =>
        Object.assign(
          new CairnError(
            'RATE_LIMITED',
            `rate limit of ${ctx.max} requests per minute exceeded; retry in ${ctx.after}`,
            { retryAfterMs: ctx.ttl },
          ),
          { statusCode: 429 },
        ),
    });
    const authenticate = async (req: FastifyRequest) => {
      if (o.keys === null) {
        req.access = NamespaceAccess.everything();
        return;
      }
      const key = bearer(req);
      if (!key) throw new CairnError('UNAUTHORIZED', 'send an API key as Authorization: Bearer <key>');
      const access = o.keys.get(key);
      if (!access) throw new CairnError('UNAUTHORIZED', 'unknown API key');
      req.access = access;
    };
    // The limiter installs its check as a route-level onRequest hook, and route-level hooks run after
    // instance-level ones; appending authentication to each route's own list keeps it after the limiter.
    api.addHook('onRoute', (route) => {
      const own = route.onRequest ? [route.onRequest].flat() : [];
      route.onRequest = [...own, authenticate] as typeof route.onRequest;
      const checks = route.preValidation ? [route.preValidation].flat() : [];
      route.preValidation = [
        ...checks,
        refuseUnknownQuery(route.schema?.querystring),
      ] as typeof route.preValidation;
    });
    registerApiRoutes(api, service);
  });

  if (o.explorerDir) await registerExplorer(app, o.explorerDir);

  registerHealthRoutes(app, service, o.queues);
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
  return app;
}

/**
 * Seconds a client should wait before retrying, for the errors worth retrying: what the error carries, or
 * a second for a backend that is down (Redis, an embedder), so that clients (the Python one retries 503s
 * that carry it) back off instead of hammering a backend that is coming back.
 */
function retryAfterOf(e: CairnError): string | undefined {
  const ms = e.data.retryAfterMs;
  if (typeof ms === 'number' && ms > 0) return String(Math.ceil(ms / 1_000));
  return e.code === 'BACKEND_UNAVAILABLE' ? '1' : undefined;
}

function registerApiRoutes(api: FastifyInstance, service: MemoryService): void {
  const errors = ERROR_RESPONSES;
  const scoped = (req: FastifyRequest) => service.scoped(req.access);

  api.post(
    '/v1/memories',
    {
      schema: {
        summary: 'Write one memory or a batch',
        description: `One memory object, or {namespace?, memories: [...]} with at most ${service.limits.maxBatch}. ?wait=stored (default) answers 201 once durable; ?wait=queued answers 202 once accepted. A fact with slot and key replaces the earlier fact of that key.`,
        body: WriteRequestSchema,
        querystring: z.object({ wait: z.enum(['stored', 'queued']).optional() }),
        response: { 201: WriteResponseSchema, 202: WriteResponseSchema, ...errors },
      },
    },
    async (req: FastifyRequest, reply: FastifyReply) => {
      const q = req.query as { wait?: string };
      const body = req.body as Record<string, unknown> | null;
      const input =
        q.wait && body && typeof body === 'object' && !Array.isArray(body) ? { ...body, wait: q.wait } : body;
      const res = await scoped(req).write(input as never);
      return reply.code(res.durable ? 201 : 202).send(res);
    },
  );
  api.delete(
    '/v1/memories/:id',
    {
      schema: {
        summary: 'Tombstone a memory',
        params: z.object({ id: z.string() }),
        querystring: DeleteQuerySchema,
        response: { 200: DeleteResponseSchema, ...errors },
      },
    },
    async (req) => {
      const { id } = req.params as { id: string };
      const q = DeleteQuerySchema.safeParse(req.query);
      if (!q.success) throw zodToCairnError(q.error);
      return scoped(req).delete(q.data.namespace, id);
    },
  );
  api.post(
    '/v1/memories/get',
    {
      schema: {
        summary: 'Full records by id (layer 3)',
        body: GetRequestSchema,
        response: { 200: GetResponseSchema, ...errors },
      },
    },
    async (req) => scoped(req).get(req.body as never),
  );
  api.post(
    '/v1/search',
    {
      schema: {
        summary: 'Hybrid search: the compact index (layer 1), every hit explained',
        body: SearchRequestSchema,
        response: { 200: SearchResponseSchema, ...errors },
      },
    },
    async (req) => scoped(req).search(req.body as never),
  );
  api.post(
    '/v1/search/batch',
    {
      schema: {
        summary: 'Many searches in one call; each answers or fails in its own slot',
        body: BatchSearchRequestSchema,
        response: { 200: BatchSearchResponseSchema, ...errors },
      },
    },
    async (req) => scoped(req).searchBatch(req.body as never),
  );
  api.post(
    '/v1/search/federated',
    {
      schema: {
        summary: 'One query over several namespaces, with a quota per namespace',
        body: FederatedSearchRequestSchema,
        response: { 200: FederatedSearchResponseSchema, ...errors },
      },
    },
    async (req) => scoped(req).searchFederated(req.body as never),
  );
  api.get(
    '/v1/timeline',
    {
      schema: {
        summary: 'The memories around one (layer 2): by anchor id, or the best hit of a query',
        querystring: TimelineQuerySchema,
        response: { 200: TimelineResponseSchema, ...errors },
      },
    },
    async (req) => scoped(req).timeline(req.query as never),
  );
  api.post(
    '/v1/context',
    {
      schema: {
        summary: 'A session-start pack within a token budget',
        body: ContextRequestSchema,
        response: { 200: ContextResponseSchema, ...errors },
      },
    },
    async (req) => scoped(req).context(req.body as never),
  );
  api.get(
    '/v1/stats',
    {
      schema: {
        summary: 'Counts of the namespaces this key may read',
        response: { 200: StatsResponseSchema, ...errors },
      },
    },
    async (req) => scoped(req).stats(),
  );
  registerSpaceRoutes(api, service);
  registerHygieneRoutes(api, service);
}

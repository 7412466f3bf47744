// This file is the public API of @cairn/http-server; named exports only.
export { type ApiKeys, loadApiKeys, parseApiKeys } from './api-keys.js';
export { EXPLORER_PREFIX } from './explorer-static.js';
export { assertAuthAllowed, createHttpServer, type HttpServerOptions } from './http-server.js';
export { EVENT_LOOP_SAMPLING_MS, ServerMetrics } from './server-metrics.js';

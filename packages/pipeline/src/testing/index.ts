// This file is the public API of @cairn/pipeline/testing: real Redis for tests; named exports only.
export {
  type RedisServer,
  type RedisServerOptions,
  redisForTests,
  redisServerBinary,
  startRedisServer,
} from './redis-server.js';

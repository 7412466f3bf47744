// This file is the public API of @cairn/engine/distributed: a `cairn worker` process's stages over BullMQ;
// named exports only. A separate entry, so that an embedded process never loads bullmq and ioredis.
export { StageWorkerHost, type StageWorkerHostOptions } from './stage-worker-host.js';

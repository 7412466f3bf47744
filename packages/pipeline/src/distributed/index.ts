// This file is the public API of @cairn/pipeline/distributed: the BullMQ transport (job catalog, queues, stage
// workers, shard leases); named exports only.
export {
  CaptureProducer,
  type CaptureProducerOptions,
  DEFAULT_CAPTURE_PRODUCER_OPTIONS,
  type EnqueueResult,
  type QueuedStatus,
} from './capture-producer.js';
export {
  assertDeploymentFolder,
  assertFolderOfDeployment,
  bindDataFolder,
  boundDataFolder,
  type DataFolderBinding,
  dataFolderKey,
} from './data-folder-binding.js';
export { keepDeploymentRecorded, RECORD_AGAIN_EVERY_MS } from './deployment-records.js';
export {
  DEFAULT_EMBED_BATCHER_OPTIONS,
  EmbedBatcher,
  type EmbedBatcherOptions,
} from './embed-batcher.js';
export {
  DEFAULT_EMBEDDING_CACHE_OPTIONS,
  EmbeddingCache,
  type EmbeddingCacheOptions,
} from './embedding-cache.js';
export {
  JOB_CATALOG,
  JOB_NAMES,
  type JobInput,
  type JobName,
  type JobPayload,
  MAX_CAPTURE_BATCH,
  MAX_STAGE_BATCH,
  parsePayload,
  type RetryPolicy,
  retryDelay,
} from './job-catalog.js';
export {
  MAINTENANCE_QUEUE,
  type MaintenanceJobName,
  MaintenanceJobs,
  type MaintenanceSchedule,
} from './maintenance-jobs.js';
export {
  type DeadLetter,
  deadLetters,
  type QueueCounts,
  queueCounts,
  retryDeadLetters,
} from './queue-inspection.js';
export {
  assertRedisReachable,
  DEFAULT_QUEUE_TOPOLOGY,
  QueueTopology,
  type QueueTopologyOptions,
  queueName,
  redisConnection,
  shardOf,
} from './queue-topology.js';
export { requeueEmbeds } from './requeue-embeds.js';
export { Lease } from './shard-lease.js';
export {
  type CapturePorts,
  type DecodedIndexBatch,
  type EmbedPorts,
  type Enqueue,
  embedJobsFor,
  type IndexPorts,
  indexBatch,
  processCapture,
  processEmbed,
  processIndex,
  type SpaceRef,
} from './stage-processors.js';
export {
  DEFAULT_STAGE_WORKERS_OPTIONS,
  STAGE_NAMES,
  type StageName,
  type StagePorts,
  StageWorkers,
  type StageWorkersOptions,
  type StageWorkersStatus,
} from './stage-workers.js';
export { decodeVector, encodeVector } from './vector-codec.js';

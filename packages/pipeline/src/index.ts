// This file is the public API of @cairn/pipeline; named exports only.
export {
  type CaptureItemResult,
  type CaptureResult,
  type CaptureStatus,
  captureBatch,
} from './capture-stage.js';
export {
  CaptureProducer,
  type CaptureProducerOptions,
  DEFAULT_CAPTURE_PRODUCER_OPTIONS,
  type EnqueueResult,
  type QueuedStatus,
} from './distributed/capture-producer.js';
export {
  DEFAULT_EMBED_BATCHER_OPTIONS,
  EmbedBatcher,
  type EmbedBatcherOptions,
} from './distributed/embed-batcher.js';
export {
  DEFAULT_EMBEDDING_CACHE_OPTIONS,
  EmbeddingCache,
  type EmbeddingCacheOptions,
} from './distributed/embedding-cache.js';
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
} from './distributed/job-catalog.js';
export {
  MAINTENANCE_QUEUE,
  type MaintenanceJobName,
  MaintenanceJobs,
  type MaintenanceSchedule,
} from './distributed/maintenance-jobs.js';
export {
  type DeadLetter,
  deadLetters,
  type QueueCounts,
  queueCounts,
  retryDeadLetters,
} from './distributed/queue-inspection.js';
export {
  assertRedisReachable,
  DEFAULT_QUEUE_TOPOLOGY,
  QueueTopology,
  type QueueTopologyOptions,
  queueName,
  redisConnection,
  shardOf,
} from './distributed/queue-topology.js';
export { requeueEmbeds } from './distributed/requeue-embeds.js';
export { Lease } from './distributed/shard-lease.js';
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
} from './distributed/stage-processors.js';
export {
  DEFAULT_STAGE_WORKERS_OPTIONS,
  STAGE_NAMES,
  type StageName,
  type StagePorts,
  StageWorkers,
  type StageWorkersOptions,
  type StageWorkersStatus,
} from './distributed/stage-workers.js';
export { decodeVector, encodeVector } from './distributed/vector-codec.js';
export {
  type EmbeddedMemories,
  type EmbedStageResult,
  embeddingText,
  embedMemories,
  embedPending,
  embedPendingRoutes,
  indexVectors,
  type VectorCache,
} from './embed-stage.js';
export {
  DEFAULT_EMBEDDED_PIPELINE_OPTIONS,
  EmbeddedPipeline,
  type EmbeddedPipelineOptions,
  type PipelineStatus,
} from './embedded-pipeline.js';
export type {
  EmbeddedVector,
  EmbeddingSink,
  IndexSink,
  PendingMemory,
  PendingSource,
  RecordSink,
  RouteEmbeddingSink,
} from './stage-ports.js';

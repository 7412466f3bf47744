// This file is the public API of @cairn/pipeline: the stage functions and the embedded transport; named
// exports only. The BullMQ transport is `@cairn/pipeline/distributed`, a separate entry so that an embedded
// process never loads bullmq and ioredis (about 0.3 s of a CLI command's start).
export {
  type CaptureItemResult,
  type CaptureResult,
  type CaptureStatus,
  captureBatch,
} from './capture-stage.js';
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
  type OffThreadPass,
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

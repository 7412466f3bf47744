// This file is the public API of @cairn/pipeline; named exports only.
export {
  type CaptureItemResult,
  type CaptureResult,
  type CaptureStatus,
  captureBatch,
} from './capture-stage.js';
export { type EmbedStageResult, embeddingText, embedPending } from './embed-stage.js';
export {
  DEFAULT_EMBEDDED_PIPELINE_OPTIONS,
  EmbeddedPipeline,
  type EmbeddedPipelineOptions,
  type PipelineStatus,
} from './embedded-pipeline.js';
export type { EmbeddedVector, EmbeddingSink, IndexSink, PendingMemory, RecordSink } from './stage-ports.js';

// This file is the public API of @cairn/service; named exports only.
export { buildContextPack, type ContextPackInput } from './context-pack.js';
export { HygieneService } from './hygiene-service.js';
export {
  headline,
  indexLine,
  leadingWithinBudget,
  recordTokens,
  renderRecord,
  toIndexEntry,
  toRecord,
  withinBudget,
} from './index-entry.js';
export { MemoryService, type MemoryServiceOptions, searchResponseOut } from './memory-service.js';
export { NamespaceAccess } from './namespace-access.js';
export { SpaceService, spaceOut } from './space-service.js';
export { fitTimeline, nearestFirst } from './timeline-fit.js';
export { countTokens, countTokensUncached, tokenCountKnown, tokenizerLoaded } from './token-counter.js';
export { TokenizerThread } from './tokenizer-thread.js';
export type { WriteForwarder } from './write-forwarder.js';

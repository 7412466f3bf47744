// This file is the public API of @cairn/router; named exports only.
export { explainEmpty } from './empty-reason.js';
export { type FusedCandidate, fuseCandidates } from './fuse-candidates.js';
export { HybridRouter, type HybridRouterComponents } from './hybrid-router.js';

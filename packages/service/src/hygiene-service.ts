import {
  ConsolidateRequestSchema,
  type ConsolidateResponse,
  ConsolidationsQuerySchema,
  type HygieneApi,
  type MergeOut,
  PruneRequestSchema,
  type PruneResponse,
  UndoConsolidationRequestSchema,
} from '@cairn/api-contract';
import { CairnError, parsePrunePolicy } from '@cairn/core';
import type { CairnEngine, ConsolidationReport } from '@cairn/engine';
import type { MergeRecord } from '@cairn/store';
import type { NamespaceAccess } from './namespace-access.js';
import { parseInput } from './parse-input.js';

function mergeOut(m: MergeRecord): MergeOut {
  return {
    namespace: m.namespace,
    id: m.id,
    into: m.into,
    cosine: m.cosine,
    at: m.at,
    undone_at: m.undoneAt,
  };
}

function reportOut(r: ConsolidationReport): ConsolidateResponse {
  return {
    dry_run: r.dryRun,
    scanned: r.scanned,
    merged: r.merged,
    exact: r.exact,
    near: r.near,
    by_namespace: r.byNamespace,
    merges: r.merges.map(mergeOut),
    ...(r.skipped ? { skipped: r.skipped } : {}),
    took_ms: r.tookMs,
  };
}

/**
 * Consolidation and pruning behind `/v1/hygiene/*`, for one caller's namespaces: what the writer's
 * schedule runs, run now or dry. A run over every namespace needs a key for all of them.
 */
export class HygieneService {
  constructor(private readonly engine: CairnEngine) {}

  scoped(access: NamespaceAccess): HygieneApi {
    return {
      consolidate: async (input) => {
        const req = parseInput(ConsolidateRequestSchema, input);
        if (req.namespace !== undefined) access.assert(req.namespace);
        else if (!access.all)
          throw new CairnError(
            'FORBIDDEN_NAMESPACE',
            'consolidating every namespace needs a key that may use all of them (*); name a namespace',
            { field: 'namespace' },
          );
        const report = await this.engine.consolidate({
          dryRun: req.dry_run,
          ...(req.namespace !== undefined ? { namespace: req.namespace } : {}),
        });
        return reportOut(report);
      },
      undoConsolidation: async (input) => {
        const req = parseInput(UndoConsolidationRequestSchema, input);
        access.assert(req.namespace);
        return { restored: this.engine.undoConsolidation(req.namespace, req.ids).map(mergeOut) };
      },
      consolidations: async (input) => {
        const q = parseInput(ConsolidationsQuerySchema, input);
        access.assert(q.namespace);
        return { merges: this.engine.consolidations(q.namespace, q.limit).map(mergeOut) };
      },
      prune: async (input): Promise<PruneResponse> => {
        const { dry_run, ...policyWire } = parseInput(PruneRequestSchema, input);
        access.assert(policyWire.namespace);
        const report = await this.engine.prune(parsePrunePolicy(policyWire), { dryRun: dry_run });
        return {
          namespace: report.namespace,
          dry_run: report.dryRun,
          covered: report.covered,
          protected: report.protected,
          pruned: report.pruned,
        };
      },
    };
  }
}

import { type EmptyReason, hasFilters, type MemorySource, type SearchFilters } from '@cairn/core';

/** Says why a search found nothing, so callers can tell "no such memory" from "wrong namespace". */
export function explainEmpty(
  memories: MemorySource,
  namespace: string,
  filters: SearchFilters,
  blankQuery: boolean,
  /** Whether the query matches anything once the filters are lifted (evaluated only when needed). */
  matchesUnfiltered: () => boolean,
): { reason: EmptyReason; message: string } {
  if (!memories.hasMatching(namespace, {})) {
    return { reason: 'empty_namespace', message: `namespace "${namespace}" holds no memories` };
  }
  if (blankQuery) return { reason: 'blank_query', message: 'the query holds no searchable words' };
  if (hasFilters(filters)) {
    if (!memories.hasMatching(namespace, filters)) {
      return { reason: 'filtered_out', message: `no memory in namespace "${namespace}" passes the filters` };
    }
    if (matchesUnfiltered()) {
      return {
        reason: 'filtered_out',
        message: 'memories match the query, but the filters exclude all of them',
      };
    }
  }
  return { reason: 'no_match', message: `no memory in namespace "${namespace}" matches the query` };
}

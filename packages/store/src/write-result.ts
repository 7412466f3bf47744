/** What a write did to one memory: stored new, updated in place, or nothing to change. */
export type WriteStatus = 'stored' | 'updated' | 'unchanged';

export interface WriteResult {
  id: string;
  namespace: string;
  status: WriteStatus;
  key: number;
}

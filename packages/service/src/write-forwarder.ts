/** The writes of an API process that does not own its data folder, done by the one that does. */
export interface WriteForwarder {
  /** Stores validated memories; answers like `CairnEngine.ingest` (durable when it resolves). */
  ingest(
    memories: unknown[],
  ): Promise<ReadonlyArray<{ index: number; status: string; id?: string; namespace?: string }>>;
  delete(namespace: string, id: string): Promise<boolean>;
  /**
   * Records a reindex request in the writer (`CairnEngine.requestReindex`); answers the space's id.
   * @defaultValue none (this process's engine records it)
   */
  reindex?(embedder: string, activate: boolean): Promise<{ id: string; active: boolean }>;
}

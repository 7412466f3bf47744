/**
 * Runs every step of a shutdown in order, each even when one before it failed, then throws the first
 * failure. A step skipped because an earlier one threw can keep the process alive: the tokenizer's thread
 * and the engine's are not unref'd (a pending answer must not be dropped), so a `cairn mcp` whose engine
 * failed to close (a full disk) reported the error and never exited.
 */
export async function closeInOrder(steps: ReadonlyArray<() => unknown>): Promise<void> {
  let first: { error: unknown } | undefined;
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      first ??= { error };
    }
  }
  if (first) throw first.error;
}

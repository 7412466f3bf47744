/** Seconds a hook may take in all before it gives up (and exits 0): the agent's turn waits for it. */
export const DEFAULT_HOOK_TIMEOUT_S = 5;
/** Token budget of the SessionStart context: enough for a few summaries, small beside the agent's window. */
export const DEFAULT_HOOK_MAX_TOKENS = 1_500;

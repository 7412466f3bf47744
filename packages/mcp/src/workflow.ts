/**
 * How an agent should use the memory tools, repeated in every tool's description (a client may show the
 * model only the tools it picked) and in the server's instructions.
 */
export const WORKFLOW = [
  'Workflow, cheapest first:',
  '(1) mem_search returns a compact index: one line per memory with its id, date, kind, title and what',
  'fetching it costs ("— 120 tok"), about 35–55 tokens a line.',
  '(2) mem_timeline shows what happened just before and after an interesting id, in the same compact form.',
  '(3) mem_get fetches the full text of only the ids you picked.',
  'Every response reports the tokens it used; pass max_tokens to cap one, its whole text (entries that do not',
  'fit are left out whole and counted as omitted). Use mem_context once at session start for a ready-made pack.',
].join(' ');

/** The server's instructions: the workflow, plus where memories go and what is worth saving. */
export function serverInstructions(namespace: string): string {
  return [
    `Cairn is this project's long-term memory (namespace "${namespace}"; tools accept another namespace where allowed).`,
    WORKFLOW,
    'Save what a later session would need with mem_save: decisions and their reasons, fixes of non-obvious',
    'bugs, conventions, the state of unfinished work. A fact saved with slot and key replaces the previous',
    'value of that key.',
  ].join(' ');
}

import { DEFAULT_API_LIMITS, type SearchRequestBody } from '@cairn/api-contract';
import { DEFAULT_INPUT_LIMITS } from '@cairn/core';
import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { fitAnswer } from '../fit-answer.js';
import { renderSearch } from '../render.js';
import { commonArgs, guarded, intArg, maxTokensArg, namespaceOf, type ToolContext } from '../tool-context.js';
import { toolOk } from '../tool-result.js';
import { WORKFLOW } from '../workflow.js';

const list = (what: string) => z.array(z.string()).optional().describe(what);

const inputSchema = {
  query: z
    .string()
    .describe(
      'what to look for: words, identifiers, file names, error messages, a question; empty with a filter lists what passes it, newest first',
    ),
  k: intArg(1, DEFAULT_API_LIMITS.maxK, 'k').optional().describe('most hits to return (default 10)'),
  kinds: list('only these kinds, e.g. ["fact", "summary"] (observation, turn, summary, fact, prompt, …)'),
  sessions: list('only memories of these sessions'),
  tags: list('only memories with any of these tags'),
  since: z
    .string()
    .optional()
    .describe('only memories at or after this time (ISO-8601, or a window back from now such as 90d)'),
  until: z
    .string()
    .optional()
    .describe('only memories before this time (ISO-8601, or a window back from now such as 12h)'),
  offset: intArg(0, DEFAULT_INPUT_LIMITS.maxListingOffset, 'offset')
    .optional()
    .describe('with an empty query and a filter: skip this many of the listing (the next page)'),
  max_tokens: maxTokensArg,
  ...commonArgs,
};

export function registerMemSearch(server: McpServer, ctx: ToolContext): RegisteredTool {
  return server.registerTool(
    'mem_search',
    {
      title: 'Search memory (compact index)',
      description:
        // Honest about the default: the built-in embedder hashes words, so paraphrases are not matched
        // unless a learned embedder (Ollama, an OpenAI-compatible API) is configured.
        'Hybrid search of the project memory: keyword ranking (BM25) fused with vector similarity, which ' +
        'matches the same words unless a learned embedder is configured, so use the words the memory would ' +
        'contain. Returns a compact index, not the ' +
        'memories: one line per hit with id, date, kind, title and its full size in tokens. Start here. ' +
        WORKFLOW,
      // Strict: an unknown argument (a misspelt `tag`, `kind` for `kinds`) is refused, never dropped.
      inputSchema: z.strictObject(inputSchema),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guarded(ctx, 'mem_search', async (args) => {
      const filters: NonNullable<SearchRequestBody['filters']> = {};
      if (args.kinds?.length) filters.kinds = args.kinds;
      if (args.sessions?.length) filters.sessions = args.sessions;
      if (args.tags?.length) filters.tags = args.tags;
      if (args.since !== undefined) filters.since = args.since;
      if (args.until !== undefined) filters.until = args.until;
      const res = await ctx.api.search({
        namespace: namespaceOf(ctx, args),
        query: args.query,
        k: args.k ?? ctx.searchK,
        ...(Object.keys(filters).length ? { filters } : {}),
        ...(args.offset ? { offset: args.offset } : {}),
        ...(args.max_tokens !== undefined ? { max_tokens: args.max_tokens } : {}),
      });
      // The per-leg explanation is for debugging rankings; it would cost the model's context for nothing.
      const all = res.hits.map(({ explain: _e, ...h }) => h);
      // The backend budgeted the index lines; the header and footers are text the model reads too.
      const usage = (n: number, used: number) => ({
        used,
        budget: res.tokens.budget,
        omitted: res.tokens.omitted + all.length - n,
      });
      // A listing's page is cut from its end, so the next page starts at the first entry left out.
      const listing = (n: number) =>
        res.listing && { offset: res.listing.offset, next: res.listing.offset + n };
      // More may pass the filters when the page was cut or came back full.
      const more = (n: number) => n < all.length + res.tokens.omitted || n >= (args.k ?? ctx.searchK);
      const shown = (n: number, used: number) => ({
        ...res,
        hits: all.slice(0, n),
        tokens: usage(n, used),
        ...(res.listing ? { listing: listing(n) } : {}),
      });
      const fit = fitAnswer(
        all.length,
        (n, used) => renderSearch(shown(n, used), { more: more(n) }),
        args.max_tokens,
        'its header',
      );
      return toolOk(fit.text, {
        namespace: res.namespace,
        query: res.query,
        hits: all.slice(0, fit.n),
        tokens: usage(fit.n, fit.used),
        degraded: res.degraded,
        ...(res.empty ? { empty: res.empty } : {}),
        ...(res.listing ? { listing: listing(fit.n) } : {}),
        ...(res.relevance ? { relevance: res.relevance } : {}),
      });
    }),
  );
}

import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { CliEnv } from '../env.js';
import { waitForVectors } from '../index-progress.js';
import { fileSize, readJsonl } from '../jsonl.js';
import { withEngine } from '../open-engine.js';
import { renderHits } from '../render.js';

/**
 * The sample corpus: a coding agent's memories of one project. In the repository it is examples/ at the
 * root; an installed package carries its own copy beside dist/ (scripts/pack-cli.mjs puts it there).
 */
export const SAMPLE_CORPUS =
  [
    new URL('../../examples/agent-memories.jsonl', import.meta.url),
    new URL('../../../../examples/agent-memories.jsonl', import.meta.url),
  ]
    .map((u) => fileURLToPath(u))
    .find((p) => existsSync(p)) ?? 'examples/agent-memories.jsonl';

const DEMO_QUERIES = [
  'why did the auth middleware crash?',
  'parseConfig',
  'what do we know about flaky tests in CI',
];

/** Ingests the sample corpus into the data dir and shows explained hybrid searches over it. */
export async function demoCommand(flags: { dataDir?: string }, env: CliEnv): Promise<void> {
  const file = SAMPLE_CORPUS;
  fileSize(file);
  const out = (s: string) => process.stdout.write(s);
  await withEngine(
    flags.dataDir,
    env,
    async (engine) => {
      const inputs: unknown[] = [];
      for await (const l of readJsonl(file)) if (l.value !== undefined) inputs.push(l.value);
      const res = engine.ingest(inputs);
      // Beside a running server (its follower), the server embeds them; otherwise this process does.
      await waitForVectors(engine, res.keys, () => engine.drain(5), false);
      const ns = (inputs[0] as { namespace: string }).namespace;
      out(`Ingested ${inputs.length} memories from ${file} into ${engine.dataDir} (namespace "${ns}"): `);
      out(
        `${res.counts.stored} stored, ${res.counts.updated} updated, ${res.counts.unchanged} unchanged, ${res.counts.rejected} rejected.\n`,
      );
      for (const query of DEMO_QUERIES) {
        out(`\n$ cairn search ${JSON.stringify(query)} --namespace ${ns}\n`);
        out(renderHits(await engine.search({ namespace: ns, query, k: 5 })));
      }
      const full = await engine.search({ namespace: ns, query: DEMO_QUERIES[0]!, k: 1, explain: 'full' });
      const top = full.hits[0];
      if (top) {
        out(`\nWhy "${top.id}" ranked first (explain fields of the top hit):\n`);
        const { text: _t, ...explained } = top;
        out(`${JSON.stringify(explained, null, 2)}\n`);
        out(
          `\n${full.explain.candidates?.length ?? 0} candidates were fused; see them all with --explain full --json.\n`,
        );
      }
      out(`\nTry: pnpm cairn search "redis timeout" --namespace ${ns}   |   pnpm cairn stats\n`);
    },
    { follow: true },
  );
}

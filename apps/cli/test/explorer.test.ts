import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRedisServer } from '@cairn/pipeline/testing';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, servedUrl, startCli } from './cli-process.js';

// The web explorer as a person uses it: Debian's Chromium, driven by playwright-core, against a real
// `cairn serve --port 0 --demo` on loopback with a temporary data folder. Every request the page makes is
// recorded and must stay on the server's origin. (Code run in the page is passed as strings: this package's
// TypeScript has Node's types, not the DOM's.)
//
// CAIRN_SCREENSHOTS=1 also writes the screenshots of docs/screenshots/ (at 1280 px); without it nothing
// in the repository is written, so a CI run never rewrites committed files.

const CHROMIUM = process.env.CAIRN_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS =
  process.env.CAIRN_SCREENSHOTS === '1'
    ? fileURLToPath(new URL('../../../docs/screenshots/', import.meta.url))
    : null;
const EXPLORER_BUILT = fileURLToPath(new URL('../../explorer/dist/index.html', import.meta.url));

// Chromium's own background traffic (component updates, sync, QUIC probes) is refused on this machine's
// closed network; these switches keep the browser to the page's requests.
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const ADMIN_KEY = 'explorer-admin-key-01';
const TENANT_KEY = 'explorer-tenant-key-01';

let dir: string;
let context: BrowserContext;
const children: ChildProcess[] = [];
/** Every URL the browser requested, for the same-origin check. */
const requested: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `Chromium not found at ${CHROMIUM}: the explorer's browser tests need it. Install Debian's package (apt-get install -y chromium; .ci/run does this) or point CAIRN_CHROMIUM at a Chromium binary.`,
    );
  if (!existsSync(EXPLORER_BUILT))
    throw new Error(`the explorer is not built (${EXPLORER_BUILT} missing): run pnpm build first`);
  dir = mkdtempSync(join(tmpdir(), 'cairn-explorer-'));
  // A fresh profile per run: nothing cached or stored from an earlier one.
  context = await chromium.launchPersistentContext(join(dir, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 800 },
    timeout: 60_000,
  });
  context.on('request', (r) => requested.push(r.url()));
});

afterAll(async () => {
  await context?.close();
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null) {
      const exited = once(c, 'exit');
      c.kill('SIGKILL');
      await exited;
    }
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** `cairn serve --port 0 --demo` (the sample corpus in demo/acme-api) on its own data folder. */
async function serve(name: string, args: string[], env: Record<string, string> = {}) {
  const child = startCli(['serve', '--port', '0', '--demo', ...args], {
    CAIRN_DATA_DIR: join(dir, name),
    ...env,
  });
  children.push(child);
  let log = '';
  child.stderr!.on('data', (d) => {
    log += d;
  });
  const url = await servedUrl(child);
  // The explorer's line comes right after the API's.
  await until(() => log).toContain(`Cairn explorer on ${url}/ui`);
  return url;
}

async function shot(page: Page, name: string): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  const path = join(SHOTS, `${name}.png`);
  await page.screenshot({ path });
  expect(statSync(path).size).toBeLessThan(200 * 1024);
}

/**
 * expect.poll with room to wait: under `pnpm test:all` every test file shares the machine's two cores,
 * and vitest's default of 1 s is too short for a page render after a search.
 */
const until = <T>(fn: () => Promise<T> | T, timeout = 20_000) => expect.poll(fn, { timeout, interval: 100 });

/** Every request of the page went to the server that served it. */
function expectSameOrigin(origin: string, from: number): void {
  const foreign = requested.slice(from).filter((u) => new URL(u).origin !== origin);
  expect(foreign).toEqual([]);
}

describe('the web explorer at /ui', () => {
  it('with auth off: namespaces, search with the score chart, the full trace, a timeline and a record, operations, listings; no foreign request', async () => {
    const url = await serve('open', ['--no-auth']);
    const from = requested.length;
    const page = await context.newPage();
    const consoleErrors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(e.message));

    // The page's own headers keep the browser to this origin (the request check below sees what it did).
    const index = await fetch(`${url}/ui/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-security-policy')).toContain("connect-src 'self'");
    expect((await fetch(`${url}/ui/assets/none.js`)).status).toBe(404);

    // /ui redirects to /ui/; the namespaces view lists the demo corpus with its counts.
    await page.goto(`${url}/ui`);
    expect(page.url()).toBe(`${url}/ui/`);
    const row = page.locator('tr[data-namespace="demo/acme-api"]');
    await until(() => row.count()).toBe(1);
    expect(await row.locator('td').first().textContent()).toBe('31');
    await until(() => page.getByTestId('ns-meta').textContent()).toContain('embedding space');
    // Counts settle once everything is embedded and indexed (pending 0), refreshed by the poll: stored,
    // superseded, deleted, embedded, indexed, pending, failed.
    await until(async () => (await row.locator('td').allTextContents()).slice(0, 7)).toEqual([
      '31',
      '0',
      '0',
      '31',
      '31',
      '0',
      '0',
    ]);
    await shot(page, 'explorer-namespaces');

    // `/` goes to the search view and focuses the query; Enter searches.
    await page.keyboard.press('/');
    await until(() => page.evaluate<string | undefined>('document.activeElement?.id')).toBe('query');
    await until(() => page.inputValue('#namespace')).toBe('demo/acme-api');
    await page.keyboard.type('why did the auth middleware crash?');
    await page.keyboard.press('Enter');
    const hits = page.getByTestId('hit');
    await until(() => hits.count()).toBe(10);
    expect(await page.getByTestId('summary').textContent()).toContain('10 hits');
    // The first hit found by the lexical leg: its rank there, and its chart's lexical bar drawn.
    const first = hits.first();
    expect(await first.getByTestId('hit-ranks').textContent()).toMatch(/BM25 rank \d+/);
    const chart = first.getByTestId('score-chart');
    expect(await chart.getAttribute('aria-label')).toMatch(/lexical RRF .*recency ×.*importance ×/);
    const lexicalWidth = Number(await chart.locator('rect.part-lexical').getAttribute('width'));
    expect(lexicalWidth).toBeGreaterThan(0);
    expect(await chart.locator('rect.factor').count()).toBe(5);
    await shot(page, 'explorer-search');

    // explain 'full' with k 5: the candidate table, one row per fused candidate, the 5 hits among them and
    // the candidates that fell below k.
    await page.fill('#k', '5');
    await page.selectOption('#explain', 'full');
    await page.click('[data-testid=search-button]');
    const trace = page.getByTestId('trace');
    await until(() => trace.count()).toBe(1);
    expect(await hits.count()).toBe(5);
    await trace.locator('summary').click();
    await until(() => trace.locator('tbody tr').count()).toBeGreaterThan(5);
    expect(await trace.locator('tbody tr[data-fate="hit"]').count()).toBe(5);
    expect(await trace.locator('tbody tr[data-fate="below_k"]').count()).toBeGreaterThan(0);
    expect(await page.getByTestId('trace-settings').textContent()).toContain('rrfK');
    await trace.evaluate((el) => el.scrollIntoView());
    await shot(page, 'explorer-trace');

    // A hit's timeline and full record, with its token count.
    const firstId = await first.getAttribute('data-id');
    await first.getByTestId('hit-link').click();
    await until(() => page.url()).toContain('#/memory?');
    await until(() => page.getByTestId('timeline-entry').count()).toBeGreaterThan(1);
    expect(await page.locator('.tl-entry.anchor').count()).toBe(1);
    await until(() => page.getByTestId('record-text').count()).toBe(1);
    expect(await page.getByTestId('record-tokens').textContent()).toMatch(/^\d+ tokens/);
    expect(await page.locator('#memory-title').textContent()).toContain(firstId);
    await shot(page, 'explorer-memory');
    // Back: the search is still there.
    await page.goBack();
    await until(() => page.getByTestId('hit').count()).toBe(5);

    // Operations: readiness, spaces (auth off may read every namespace), and the latency chart, which
    // starts with searches made while the page is open.
    await page.goto(`${url}/ui/#/ops`);
    await until(() => page.getByTestId('readiness').textContent()).toContain('ok (HTTP 200)');
    await until(() => page.getByTestId('spaces-table').count()).toBe(1);
    expect(await page.getByTestId('spaces-table').textContent()).toContain('active');
    await until(() => page.getByTestId('latency-total').count()).toBe(1);
    // A point per scrape (every 3 s) with searches since the one before; a screenshot waits for a few.
    const points = async () => {
      for (const q of ['rate limiting', 'redis', 'parseConfig'])
        await postJson(`${url}/v1/search`, { namespace: 'demo/acme-api', query: q });
      return page.locator('[data-testid=latency-chart] circle').count();
    };
    await expect.poll(points, { timeout: 40_000, interval: 1_500 }).toBeGreaterThanOrEqual(SHOTS ? 5 : 1);
    expect(await page.getByTestId('queues').textContent()).toContain('embedded');
    await shot(page, 'explorer-operations');

    // A listing: a blank query with a filter, newest first, k at a time (the form's k, still 5), paged by
    // offset: never a whole namespace.
    await page.goto(`${url}/ui/#/search?ns=demo%2Facme-api&browse=1`);
    await until(() => page.getByTestId('summary').textContent()).toContain('5 memories listed');
    expect(await page.getByTestId('hit').first().getAttribute('data-id')).toBe('mem-031');
    await page.getByRole('button', { name: 'older →' }).click();
    await until(() => page.getByTestId('summary').textContent()).toContain('from offset 5');
    expect(await page.getByTestId('hit').first().getAttribute('data-id')).toBe('mem-026');

    // A search typed after the listing, a record opened from it, then Back: the search as it was, not the
    // listing again from its start.
    await page.fill('#query', 'redis');
    await page.press('#query', 'Enter');
    await until(() => page.getByTestId('summary').textContent()).toContain('hit');
    await page.getByTestId('hit-link').first().click();
    await until(() => page.url()).toContain('#/memory?');
    await page.goBack();
    await until(() => page.getByTestId('hit').count()).toBeGreaterThan(0);
    expect(await page.inputValue('#query')).toBe('redis');
    expect(await page.getByTestId('summary').textContent()).not.toContain('listed');

    // A listing with k left blank is paged 10 at a time, as its pager counts (the server's default is 5).
    await page.fill('#query', '');
    await page.fill('#k', '');
    await page.press('#query', 'Enter');
    await until(() => page.getByTestId('summary').textContent()).toContain('10 memories listed');
    expect(await page.getByRole('button', { name: 'older →' }).isEnabled()).toBe(true);

    // Nothing matches: the response's empty reason, said plainly.
    await page.fill('#query', 'zzqxv');
    await page.fill('#since', '');
    await page.press('#query', 'Enter');
    await until(() => page.getByTestId('empty').textContent()).toMatch(/no_match|blank_query/);

    // A narrow window: the page reflows instead of scrolling sideways.
    await page.setViewportSize({ width: 400, height: 900 });
    await page.goto(`${url}/ui/#/search?ns=demo%2Facme-api`);
    await page.fill('#query', 'redis');
    await page.press('#query', 'Enter');
    await until(() => page.getByTestId('hit').count()).toBeGreaterThan(0);
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    // A title without a space (a path, a hash) wraps too, in a hit, a timeline and a record.
    const long = `src/${'very-long-segment/'.repeat(25)}index.ts`;
    const w = await postJson(`${url}/v1/memories`, {
      namespace: 'ui/long',
      id: 'long-title',
      title: long,
      text: 'the longtitleword memory',
    });
    expect(w.status).toBe(201);
    await page.goto(`${url}/ui/#/search?ns=ui%2Flong`);
    await page.fill('#query', 'longtitleword');
    await page.press('#query', 'Enter');
    await until(() => page.getByTestId('hit').count()).toBe(1);
    expect(
      await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth'),
    ).toBeLessThanOrEqual(0);
    await page.getByTestId('hit-link').first().click();
    await until(() => page.getByTestId('record-text').count()).toBe(1);
    expect(
      await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth'),
    ).toBeLessThanOrEqual(0);
    await page.setViewportSize({ width: 1280, height: 800 });

    expect(consoleErrors, consoleErrors.join('\n')).toEqual([]);
    expectSameOrigin(url, from);
    await page.close();
  });

  it('distributed: the queues show their depths, and once Redis stops answering say so rather than "embedded"', async () => {
    const redis = await startRedisServer();
    // Closed whatever happens: a page left open keeps polling its server into the next test's requests.
    let page: Page | null = null;
    try {
      const child = startCli(['serve', '--port', '0', '--no-auth'], {
        CAIRN_DATA_DIR: join(dir, 'distributed'),
        REDIS_URL: redis.url,
        CAIRN_QUEUE_PREFIX: 'explorer-test',
      });
      children.push(child);
      const url = await servedUrl(child);
      const tab = await context.newPage();
      page = tab;
      await tab.goto(`${url}/ui/#/ops`);
      await until(() => tab.getByTestId('queues').textContent()).toContain('capture');
      // No `cairn worker` runs: the capture queue's workers read 0, marked, however empty the queue is.
      await until(() => tab.getByTestId('workers-capture').textContent()).toBe('0');
      expect(await tab.getByTestId('workers-capture').getAttribute('class')).toContain('bad');
      await redis.stop('SIGKILL');
      await until(() => tab.getByTestId('queues-unknown').count(), 30_000).toBe(1);
      // Neither stale depths nor "no dead letters": what Redis held is unknown while it is down.
      await until(() => tab.getByTestId('queues').textContent()).toContain('BACKEND_UNAVAILABLE');
      expect(await tab.getByTestId('queues').textContent()).not.toContain('runs embedded');
      expect(await tab.getByTestId('queues').locator('table').count()).toBe(0);
      expect(await tab.getByTestId('dead-letters-none').count()).toBe(0);
    } finally {
      await page?.close();
      await redis.close();
    }
  });

  it('with API keys: the page loads without one, data needs one, and a key sees nothing of a namespace it was not given', async () => {
    const url = await serve('keys', [], { CAIRN_API_KEYS: `${ADMIN_KEY}=*;${TENANT_KEY}=team/*` });
    const w = await postJson(
      `${url}/v1/memories`,
      { namespace: 'team/alpha', text: 'Team alpha deploys on Fridays.', session: 't1' },
      ADMIN_KEY,
    );
    expect(w.status).toBe(201);
    const from = requested.length;
    const page = await context.newPage();
    const useKey = async (key: string) => {
      await page.fill('#api-key', key);
      await page.press('#api-key', 'Enter');
    };

    // The page itself is public; its first data call is refused without a key, and says so.
    await page.goto(`${url}/ui/`);
    await until(() => page.getByTestId('error').textContent()).toContain('HTTP 401 UNAUTHORIZED');

    // The tenant's key: only its own namespace is listed.
    await useKey(TENANT_KEY);
    await until(() => page.locator('tr[data-namespace="team/alpha"]').count()).toBe(1);
    expect(await page.locator('tr[data-namespace="demo/acme-api"]').count()).toBe(0);
    expect(await page.getByTestId('ns-table').textContent()).not.toContain('demo/acme-api');

    // Naming the other namespace by hand: the search is refused, and the error is shown, no hit.
    await page.goto(`${url}/ui/#/search`);
    await until(() => page.inputValue('#namespace')).toBe('team/alpha');
    await page.fill('#namespace', 'demo/acme-api');
    await page.fill('#query', 'auth middleware');
    await page.press('#query', 'Enter');
    await until(() => page.getByTestId('error').textContent()).toContain('HTTP 403 FORBIDDEN_NAMESPACE');
    expect(await page.getByTestId('hit').count()).toBe(0);
    // Its timeline and records too.
    await page.goto(`${url}/ui/#/memory?ns=demo%2Facme-api&id=mem-001`);
    await until(() => page.getByTestId('error').count()).toBe(2);
    for (const t of await page.getByTestId('error').allTextContents()) expect(t).toContain('403');
    expect(await page.getByTestId('record-text').count()).toBe(0);
    // The operator's routes need a * key: the 403 is shown as such.
    await page.goto(`${url}/ui/#/ops`);
    await until(() => page.getByTestId('spaces').textContent()).toContain('HTTP 403 FORBIDDEN_NAMESPACE');

    // The key lives in sessionStorage for this tab; the admin key sees everything.
    expect(await page.evaluate<string | null>("sessionStorage.getItem('cairn.apiKey')")).toBe(TENANT_KEY);
    await useKey(ADMIN_KEY);
    await until(() => page.getByTestId('spaces-table').count()).toBe(1);
    await page.goto(`${url}/ui/#/namespaces`);
    await until(() => page.locator('tr[data-namespace="demo/acme-api"]').count()).toBe(1);
    expect(await page.locator('tr[data-namespace="team/alpha"]').count()).toBe(1);

    expectSameOrigin(url, from);
    await page.close();
  });
});

// The recency test set: a project's state changing over months, in free text (never slot/key facts).
// Each topic is a piece of state ("the deploy target") that moves through a few values, each move stated
// in a memory with its reason, among filler turns that share the topic's words and are often newer.
// Two kinds of question:
// - current: asks for the state now (some with a cue such as "now" or "current", some in plain present
//   tense); the newest statement of the topic must rank first;
// - old: names an earlier event ("why did we move off fly.io?"); that event's memory must rank first.
// Generated, seeded and deterministic: the same set every run, nothing copied from any dataset.
import { pick, type Random, seededRandom } from './seeded-random.js';

interface Topic {
  /** The piece of state, as people write it: "deploy target". */
  subject: string;
  /** One word of the subject that filler turns also use, so lexical matching alone cannot decide. */
  fillerWord: string;
  /** Successive values, each with why it was chosen. */
  values: Array<{ name: string; why: string }>;
}

const TOPICS: Topic[] = [
  {
    subject: 'deploy target',
    fillerWord: 'deploy',
    values: [
      { name: 'fly.io', why: 'its free tier covers staging' },
      { name: 'Render', why: 'fly.io cold starts kept breaking p99 latency' },
      { name: 'AWS ECS Fargate', why: "Render's build minutes got too expensive" },
    ],
  },
  {
    subject: 'primary database',
    fillerWord: 'database',
    values: [
      { name: 'SQLite', why: 'one file is enough for the prototype' },
      { name: 'PostgreSQL 15', why: 'SQLite locked up under concurrent writers' },
      { name: 'PostgreSQL 16 on Neon', why: 'branching databases per pull request saves hours' },
    ],
  },
  {
    subject: 'CI provider',
    fillerWord: 'CI',
    values: [
      { name: 'Travis CI', why: 'the team already knew its config' },
      { name: 'GitHub Actions', why: 'Travis queues took twenty minutes' },
      { name: 'Buildkite', why: 'self-hosted runners cut the bill in half' },
    ],
  },
  {
    subject: 'logging library',
    fillerWord: 'logging',
    values: [
      { name: 'winston', why: 'it was in the starter template' },
      { name: 'pino', why: 'winston cost 15% of request CPU' },
    ],
  },
  {
    subject: 'auth provider',
    fillerWord: 'auth',
    values: [
      { name: 'Auth0', why: 'social logins out of the box' },
      { name: 'Clerk', why: 'Auth0 pricing jumped at 10k monthly users' },
      { name: 'Keycloak', why: 'the enterprise customer requires self-hosted identity' },
    ],
  },
  {
    subject: 'package manager',
    fillerWord: 'package',
    values: [
      { name: 'npm', why: 'it ships with Node' },
      { name: 'yarn classic', why: 'npm installs were not reproducible' },
      { name: 'pnpm', why: 'yarn classic is unmaintained and the workspace needs strict isolation' },
    ],
  },
  {
    subject: 'test runner',
    fillerWord: 'tests',
    values: [
      { name: 'Jest', why: 'everyone knows it' },
      { name: 'Vitest', why: 'Jest could not run the ESM packages without hacks' },
    ],
  },
  {
    subject: 'feature flag service',
    fillerWord: 'flag',
    values: [
      { name: 'LaunchDarkly', why: 'the PM wanted percentage rollouts' },
      { name: 'Unleash', why: 'LaunchDarkly seats were too costly for contractors' },
      { name: 'flags in the config table', why: 'we only ever used on/off switches' },
    ],
  },
  {
    subject: 'error tracker',
    fillerWord: 'errors',
    values: [
      { name: 'Sentry', why: 'source maps just work' },
      { name: 'Honeybadger', why: 'Sentry quota ran out every month' },
    ],
  },
  {
    subject: 'job queue backend',
    fillerWord: 'queue',
    values: [
      { name: 'Redis with BullMQ', why: 'retries and delays come built in' },
      { name: 'SQS', why: 'the Redis instance kept evicting keys under memory pressure' },
      { name: 'pg-boss on Postgres', why: 'one less service to operate' },
    ],
  },
  {
    subject: 'CDN',
    fillerWord: 'assets',
    values: [
      { name: 'CloudFront', why: 'we were already on AWS' },
      { name: 'Cloudflare', why: 'CloudFront invalidations took fifteen minutes' },
    ],
  },
  {
    subject: 'email provider',
    fillerWord: 'email',
    values: [
      { name: 'SendGrid', why: 'the marketing team used it' },
      { name: 'Postmark', why: 'SendGrid password reset mails landed in spam' },
      { name: 'Amazon SES', why: 'Postmark volume pricing did not scale to the newsletter' },
    ],
  },
  {
    subject: 'staging URL',
    fillerWord: 'staging',
    values: [
      { name: 'staging.acme.dev', why: 'the first domain we bought' },
      { name: 'acme-staging.fly.dev', why: 'the acme.dev certificate expired and nobody owned the DNS' },
      { name: 'stage.acme.io', why: 'the company consolidated on the acme.io domain' },
    ],
  },
  {
    subject: 'on-call lead',
    fillerWord: 'pager',
    values: [
      { name: 'Priya', why: 'she wrote most of the runbooks' },
      { name: 'Marcus', why: 'Priya moved to the data team' },
      { name: 'Lena', why: 'Marcus went on parental leave' },
    ],
  },
  {
    subject: 'release branch',
    fillerWord: 'branch',
    values: [
      { name: 'release/2.x', why: 'the 2.0 launch' },
      { name: 'release/3.x', why: 'the breaking API change shipped as 3.0' },
    ],
  },
  {
    subject: 'Node version',
    fillerWord: 'runtime',
    values: [
      { name: 'Node 18', why: 'the LTS line at the time' },
      { name: 'Node 20', why: 'Node 18 reached end of life' },
      { name: 'Node 22', why: 'the native fetch and test runner fixes we needed' },
    ],
  },
  {
    subject: 'ORM',
    fillerWord: 'migrations',
    values: [
      { name: 'TypeORM', why: 'the decorators matched the NestJS style' },
      { name: 'Prisma', why: 'TypeORM migrations kept generating drops' },
      { name: 'Drizzle', why: "Prisma's engine binary broke the Lambda bundle" },
    ],
  },
  {
    subject: 'API rate limit',
    fillerWord: 'limit',
    values: [
      { name: '100 requests per minute', why: 'a safe default for the beta' },
      { name: '600 requests per minute', why: 'the mobile app polls every few seconds' },
      { name: '1,200 requests per minute per key', why: 'orchestrator customers batch their calls' },
    ],
  },
  {
    subject: 'cache TTL for product pages',
    fillerWord: 'cache',
    values: [
      { name: '5 minutes', why: 'prices rarely change' },
      { name: '30 seconds', why: 'flash sales showed stale prices' },
    ],
  },
  {
    subject: 'default cloud region',
    fillerWord: 'region',
    values: [
      { name: 'us-east-1', why: 'the cheapest region' },
      { name: 'eu-west-1', why: 'GDPR counsel asked for EU data residency' },
      { name: 'eu-central-1', why: 'Frankfurt had lower latency for the German customers' },
    ],
  },
  {
    subject: 'monitoring dashboard',
    fillerWord: 'metrics',
    values: [
      { name: 'Grafana Cloud', why: 'free for three users' },
      { name: 'Datadog', why: 'APM traces across services' },
      { name: 'self-hosted Grafana with Prometheus', why: 'Datadog custom metrics billing exploded' },
    ],
  },
  {
    subject: 'search backend',
    fillerWord: 'search',
    values: [
      { name: 'Postgres full-text search', why: 'no new infrastructure' },
      { name: 'Elasticsearch', why: 'typo tolerance and facets' },
      { name: 'Meilisearch', why: 'Elasticsearch ate 8 GB of heap for a small index' },
    ],
  },
  {
    subject: 'code owner of the billing service',
    fillerWord: 'billing',
    values: [
      { name: 'Tom', why: 'he built the Stripe integration' },
      { name: 'Aisha', why: 'Tom left the company' },
    ],
  },
  {
    subject: 'frontend framework',
    fillerWord: 'frontend',
    values: [
      { name: 'Create React App', why: 'the fastest start in 2021' },
      { name: 'Next.js', why: 'CRA is deprecated and SEO needed server rendering' },
      { name: 'Remix', why: 'Next.js app router caching confused the team' },
    ],
  },
];

/**
 * How the first value and each change are stated, each with the old-event question that names it. The
 * question uses the event's own words ("why did we switch the CI provider from Travis CI?" for "Switched
 * the CI provider from Travis CI to …"): the set measures how age is weighed against relevance, not
 * synonym matching, which LoCoMo measures. {S} subject, {V} value, {O} old value, {W} why.
 */
const FIRST = [
  { says: 'We picked {V} as the {S} because {W}.', asks: 'Why did we originally pick {V} as the {S}?' },
  {
    says: 'Decision: the {S} is {V}, since {W}.',
    asks: 'What was the first decision on the {S}, and why {V}?',
  },
  { says: 'Set up {V} for the {S}; reason: {W}.', asks: 'Why did we set up {V} for the {S} at first?' },
];
const CHANGE = [
  { says: 'We moved the {S} off {O} and onto {V} because {W}.', asks: 'Why did we move the {S} off {O}?' },
  { says: 'Switched the {S} from {O} to {V}: {W}.', asks: 'Why did we switch the {S} from {O}?' },
  {
    says: 'Decided to replace {O} with {V} as the {S}, because {W}.',
    asks: 'Why did we replace {O} as the {S}?',
  },
];

/** Current-state questions: with a temporal cue, and in plain present tense (the tie-break's job). */
const CURRENT_CUED = [
  'What is the {S} now?',
  "What's our current {S}?",
  'Which {S} are we using these days?',
];
const CURRENT_PLAIN = ['Which {S} do we use?', 'What is the {S}?', 'Remind me of the {S}.'];
/** An old-event question that names only the value that was left: the statement that left it must win. */
const OLD_WRONG = 'What was wrong with {O}?';

/** Turns that mention the topic's filler word (and sometimes its values) without stating the state. */
const FILLER = [
  'The {F} step failed on a typo in the config; fixed and re-ran it.',
  'Paired with the new hire on the {F} docs, walked through the README.',
  'Reminder to self: the {F} checklist needs an owner before the offsite.',
  'Spent the afternoon on a flaky test around {F}; it was a timezone bug.',
  'User asked a question about {F} in the support channel; pointed them at the wiki.',
  'The {F} alerts were noisy overnight; tuned the thresholds.',
  'Wrote a short note on how {F} interacts with the retry logic.',
  'Reviewed a pull request touching {F}; asked for more tests.',
  'Someone mentioned {X} in standup while talking about {F}, nothing decided.',
  'Benchmarked {F} again after the dependency bump; numbers unchanged.',
];
const GENERIC = [
  'Standup: mostly bug triage today.',
  'Updated the changelog and tagged the patch release.',
  'Lunch-and-learn about accessibility audits.',
  'Cleaned up stale branches in the repo.',
  'The design review for the settings page went well.',
  'Rotated the API keys for the analytics vendor.',
  'Investigated a memory leak in the image resizer; it was an unbounded map.',
  'Planning poker for the next sprint.',
];

export interface RecencyMemory {
  id: string;
  namespace: string;
  kind: string;
  session: string;
  ts: string;
  text: string;
}
export interface RecencyQuestion {
  id: string;
  namespace: string;
  query: string;
  half: 'current' | 'old';
  /** The one memory that must rank first. */
  answer: string;
}

const fill = (t: string, vars: Record<string, string>) =>
  t.replace(/\{(\w)\}/g, (_, k: string) => vars[k] ?? '');

/**
 * Builds the set: every topic's statements spread 2–8 weeks apart over about nine months (from 2026-01-05),
 * filler turns at random times, about a third of them after the topic's last statement.
 */
export function recencySet(
  seed = 15,
  namespace = 'recency/acme',
): { memories: RecencyMemory[]; questions: RecencyQuestion[] } {
  const rand: Random = seededRandom(seed);
  const DAY = 86_400_000;
  const start = Date.parse('2026-01-05T09:00:00Z');
  const end = start + 280 * DAY;
  const memories: RecencyMemory[] = [];
  const questions: RecencyQuestion[] = [];
  const at = (ms: number) => new Date(Math.round(ms / 60_000) * 60_000).toISOString();
  const session = (ms: number) => `s${Math.floor((ms - start) / (7 * DAY)) + 1}`;
  TOPICS.forEach((topic, ti) => {
    let t = start + (rand() * 30 + 1) * DAY;
    topic.values.forEach((v, vi) => {
      const id = `t${ti}-v${vi}`;
      const vars = { S: topic.subject, V: v.name, W: v.why, O: topic.values[vi - 1]?.name ?? '' };
      const form = pick(rand, vi === 0 ? FIRST : CHANGE);
      const kind = pick(rand, ['turn', 'observation', 'summary']);
      memories.push({ id, namespace, kind, session: session(t), ts: at(t), text: fill(form.says, vars) });
      questions.push({ id: `${id}#event`, namespace, query: fill(form.asks, vars), half: 'old', answer: id });
      if (vi > 0 && rand() < 0.5) {
        questions.push({
          id: `${id}#wrong`,
          namespace,
          query: fill(OLD_WRONG, vars),
          half: 'old',
          answer: id,
        });
      }
      t += (14 + rand() * 42) * DAY;
    });
    const last = topic.values.length - 1;
    const newest = `t${ti}-v${last}`;
    questions.push({
      id: `${newest}#cued`,
      namespace,
      query: fill(pick(rand, CURRENT_CUED), { S: topic.subject }),
      half: 'current',
      answer: newest,
    });
    questions.push({
      id: `${newest}#plain`,
      namespace,
      query: fill(pick(rand, CURRENT_PLAIN), { S: topic.subject }),
      half: 'current',
      answer: newest,
    });
    // Filler sharing the topic's word, some after its last statement (newer than the answer).
    for (let f = 0; f < 8; f++) {
      const ts = start + rand() * (end - start);
      const x = pick(rand, topic.values).name;
      memories.push({
        id: `t${ti}-f${f}`,
        namespace,
        kind: 'turn',
        session: session(ts),
        ts: at(ts),
        text: fill(pick(rand, FILLER), { F: topic.fillerWord, X: x }),
      });
    }
  });
  for (let g = 0; g < 80; g++) {
    const ts = start + rand() * (end - start);
    memories.push({
      id: `g${g}`,
      namespace,
      kind: 'turn',
      session: session(ts),
      ts: at(ts),
      text: pick(rand, GENERIC),
    });
  }
  memories.sort((a, b) => a.ts.localeCompare(b.ts));
  return { memories, questions };
}

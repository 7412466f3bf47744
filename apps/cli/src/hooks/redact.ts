/**
 * Secrets are taken out of everything a Claude Code hook stores. A tool's input is whatever the agent typed
 * (a `curl -H "Authorization: Bearer …"`, an `export GITHUB_TOKEN=…`, a `.env` file it wrote) and a stored
 * memory is searched, exported and shown to later sessions, so a key that reached one must be treated as
 * leaked. Each pattern has a name, which is what the replacement says: `[REDACTED:github-token]`.
 *
 * Redaction errs towards removing: a false positive costs a few words of a memory, a false negative a key.
 */

export interface SecretPattern {
  /** Shown in the replacement, `[REDACTED:<name>]`, and in docs/claude-code-hooks.md. */
  name: string;
  /** What it catches, for the docs. */
  description: string;
  /** Global regex; the whole match is replaced unless `replace` keeps part of it. */
  pattern: RegExp;
  /** The replacement of one match (default: the marker alone); return the match itself to keep it. */
  replace?: (marker: string, match: string, ...groups: Array<string | undefined>) => string;
}

export const marker = (name: string) => `[REDACTED:${name}]`;

/** Words that say the value next to them is a credential (in `KEY=value` and in prose). */
const SECRET_WORD =
  '(?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|client[_-]?secret|secret|password|passwd|passphrase|sshpass|token|credentials?)';

const ENDS_IN_SECRET_WORD = new RegExp(`${SECRET_WORD}$`, 'i');

/**
 * What may follow the credential word in a name (`SECRET_KEY_BASE`, `API_KEY_V2`, `DB_PASSWORD_PROD`). In
 * text only an upper-case name takes one (an environment variable's convention): lower case, `token_test:`
 * and `token_base: cl100k` are code and prose. An object key takes one whatever its case.
 */
const SECRET_SUFFIX =
  '(?:[_-](?:base|value|prod|production|live|dev|test|staging|primary|secondary|backup|old|new|v\\d+|\\d+))*';

/**
 * After `:` (YAML, JSON, TypeScript), a value that is a type or a literal is a declaration, not a secret:
 * `password: string`, `token: z.string()`, `secret: null` are kept.
 */
const DECLARATION =
  /^(?:string|number|boolean|bigint|any|unknown|never|object|null|undefined|true|false|none|str|int|bool|bytes|optional|z\.|t\.|type\b|interface\b|new\b|this\b|\(|\[|\{|<|process\.env|os\.environ|env\.|\$\{|\$[A-Z_])/i;

/**
 * A value that is code, not a credential: `token = req.headers.authorization`, `password = getPassword()`,
 * `token = await fetchToken()`, `secret = None`.
 */
const CODE_VALUE =
  /^(?:(?:await|new|typeof|function|async|require|import|null|undefined|true|false|none|nil|this|self)\b|[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$|[A-Za-z_$][\w$.]*\()/i;

/** Bits per character: a random key scores above 3.5, English and identifiers mostly below. */
export function shannonEntropy(s: string): number {
  const counts = new Map<string, number>();
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

/** A long token that looks random rather than like a word, a path or a repeated character. */
function looksRandom(token: string): boolean {
  const core = token.replace(/=+$/, '');
  // A path (`/Users/Ann/Projects2024/app`) mixes cases and digits too.
  if (core.startsWith('/') || /\/[A-Za-z]{3,}\//.test(core)) return false;
  if (/^[0-9a-f]+$/i.test(core)) return core.length >= 32 && shannonEntropy(core) >= 3;
  const classes = [/[a-z]/, /[A-Z]/, /[0-9]/].filter((r) => r.test(core)).length;
  return classes >= 2 && shannonEntropy(core) >= 3.5;
}

/**
 * Whether a dotted value has a long random part: `ya29.a0AfH6SMBx…` (a Google OAuth token) is a
 * credential, though it reads like `req.headers.authorization`.
 */
function hasRandomPart(value: string): boolean {
  return value
    .split('.')
    .some((part) => part.length >= 20 && looksRandom(part) && piecesPerChar(part) >= 0.35);
}

/**
 * Word pieces per character: an identifier splits into a few words (`someVeryLongFunctionNameHelper`
 * 0.2, `AzureActiveDirectoryB2C` 0.26), a random token into many one- or two-letter pieces
 * (`a0AfH6SMBx3jKq9Lr2Tz8WvYpNc4DeFgHiJk` 0.6).
 */
function piecesPerChar(s: string): number {
  return (s.match(/[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+/g)?.length ?? 0) / s.length;
}

/**
 * The named patterns, most specific first: a GitHub token inside `GITHUB_TOKEN=ghp_…` is named
 * `github-token`, and the generic assignment pattern then finds nothing left to take.
 */
export const SECRET_PATTERNS: readonly SecretPattern[] = [
  {
    name: 'private-key',
    description:
      'PEM private key blocks (RSA, EC, DSA, OPENSSH, PGP, ENCRYPTED …), to the END line or the end of the text',
    pattern:
      /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)/g,
  },
  {
    name: 'aws-access-key',
    description: 'AWS access key ids (AKIA…, ASIA… and the other four-letter prefixes, 20 characters)',
    pattern: /\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}\b/g,
  },
  {
    name: 'aws-secret-key',
    description:
      'AWS secret access keys: 40 base64 characters after aws_secret_access_key / aws…secret (=, : or a space: aws configure set aws_secret_access_key …)',
    pattern:
      /(\baws[A-Za-z0-9_.-]{0,20}?secret[A-Za-z0-9_.-]{0,20}["']?(?:\s*(?:=|:)\s*|\s+)["']?)([A-Za-z0-9/+=]{40})\b/gi,
    replace: (m, _match, key) => `${key}${m}`,
  },
  {
    name: 'github-token',
    description: 'GitHub tokens: ghp_, gho_, ghu_, ghs_, ghr_ and fine-grained github_pat_',
    pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})\b/g,
  },
  {
    name: 'gitlab-token',
    description: 'GitLab personal, project and group access tokens (glpat-…) and other glXX- tokens',
    pattern: /\bgl(?:pat|dt|ptt|rt|soat|ft|imt|agent|cbt|oas)-[A-Za-z0-9_-]{20,}/g,
  },
  {
    name: 'huggingface-token',
    description: 'Hugging Face access tokens (hf_…, 30+ characters)',
    pattern: /\bhf_[A-Za-z0-9]{30,}\b/g,
  },
  {
    name: 'anthropic-key',
    description: 'Anthropic API keys (sk-ant-…)',
    pattern: /\bsk-ant-[A-Za-z0-9_-]{16,}/g,
  },
  {
    name: 'openai-key',
    description: 'OpenAI-style secret keys (sk-…, sk-proj-…, sk-svcacct-…), 20+ characters after sk-',
    pattern: /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/g,
  },
  {
    name: 'stripe-key',
    description: 'Stripe secret and restricted keys (sk_live_, sk_test_, rk_live_, rk_test_)',
    pattern: /\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}/g,
  },
  {
    name: 'slack-token',
    description: 'Slack tokens (xoxb-, xoxp-, xoxa-, xoxo-, xoxr-, xoxs-, xoxe-) and incoming-webhook URLs',
    pattern: /\bxox[abeoprs]-[A-Za-z0-9-]{10,}|https:\/\/hooks\.slack\.com\/services\/[A-Za-z0-9/_-]+/g,
  },
  {
    name: 'google-api-key',
    description: 'Google API keys (AIza…, 39 characters)',
    pattern: /\bAIza[0-9A-Za-z_-]{35}\b/g,
  },
  {
    name: 'npm-token',
    description: 'npm access tokens (npm_…)',
    pattern: /\bnpm_[A-Za-z0-9]{36}\b/g,
  },
  {
    name: 'jwt',
    description: 'JSON Web Tokens: three base64url segments, the first starting eyJ',
    pattern: /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
  },
  {
    name: 'bearer-token',
    description: 'the credential after Bearer, Basic, Token or Digest (in an Authorization header or not)',
    pattern: /\b(Bearer|Basic|Token|Digest)(\s+)([A-Za-z0-9._~+/=-]{8,})/g,
    replace: (m, match, scheme, space, value) =>
      // "Bearer tokens", "Basic authentication": prose. A credential has a digit, mixed case or padding.
      /[0-9=]/.test(value!) || /[a-z].*[A-Z]|[A-Z].*[a-z]/.test(value!.slice(1))
        ? `${scheme}${space}${m}`
        : match,
  },
  {
    name: 'url-credentials',
    description: 'the password in a URL (scheme://user:password@host)',
    pattern: /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@"'`]+:)([^\s@/"'`]+)(@)/gi,
    replace: (m, match, head, pw, at) => (pw!.startsWith('[REDACTED:') ? match : `${head}${m}${at}`),
  },
  {
    name: 'cookie',
    description:
      "the name=value pairs of a Cookie or Set-Cookie header, quoted or not (`cookie: string` is a declaration), and the value of curl's -b / --cookie (not a cookie file: a value without =)",
    pattern:
      /(\b(?:set-)?cookie["']?\s*:\s*["']?)([^\s"'=;:,]+=[^\s"';,]*(?:;\s*[^\s"'=;:,]+(?:=[^\s"';,]*)?)*)|(\bcurl\b[^\n|;&]*?\s(?:-b|--cookie)\s+["']?)([^\s"'][^\s"']*)/gi,
    replace: (m, match, headerHead, headerValue, curlHead, curlValue) => {
      const [head, value] = headerHead !== undefined ? [headerHead, headerValue!] : [curlHead!, curlValue!];
      // Already redacted (a JWT in it), or curl's cookie file: without an `=` curl reads `-b` as a file name
      // (`-b cookies.txt`, `-b ~/.cookies`).
      return value.startsWith('[REDACTED:') || (curlHead !== undefined && !value.includes('='))
        ? match
        : `${head}${m}`;
    },
  },
  {
    name: 'cli-password',
    description:
      "the password of a command's user:password argument (curl -u bob:pa55 / --user), glued to mysql's -p (mysql -pHunter2, mysqldump -p'x'), or after -p of sshpass (glued too) and of docker, podman, nerdctl, buildah, helm registry and az login; a reference ($DOCKER_PASSWORD) is kept",
    pattern:
      /(\s(?:-u|--user)\s+['"]?[^\s:'"]+:)([^\s'"]+)|(\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n|;&]*?\s-p)('[^']*'|"[^"]*"|[^\s'"]+)|(\bsshpass(?:\s+(?:-[fdP]\s*\S+|-[evhV]))*\s+-p\s*|\b(?:(?:docker|podman|nerdctl|buildah|helm\s+registry)\s+login|az\s+login)\b[^\n|;&]*?\s-p\s+)('[^']*'|"[^"]*"|[^\s'"]+)/g,
    replace: (m, match, userHead, userPw, mysqlHead, mysqlPw, loginHead, loginPw) => {
      const [head, pw] =
        userHead !== undefined
          ? [userHead, userPw!]
          : mysqlHead !== undefined
            ? [mysqlHead, mysqlPw!]
            : [loginHead!, loginPw!];
      // Already redacted, or a reference to where the password lives (`-p "$DOCKER_PASSWORD"`).
      return /^["']?(?:\[REDACTED:|\$)/.test(pw) ? match : `${head}${m}`;
    },
  },
  {
    name: 'cli-flag',
    description:
      'the value after a credential-like command-line flag separated by a space: --password x, --token x, --api-key x, --client-secret x',
    pattern: new RegExp(`(\\s--?[A-Za-z0-9_-]*${SECRET_WORD})(\\s+)([^\\s<>|$&;-][^\\s;&|]*)`, 'gi'),
    replace: (m, match, flag, space, value) =>
      value!.startsWith('[REDACTED:') ? match : `${flag}${space}${m}`,
  },
  {
    name: 'assignment',
    description:
      'the value of an assignment (=, :, :=, =>) to a credential-like name: api_key, apikey, access_key, secret_key, private_key, client_secret, secret, password, passwd, passphrase, token, credentials, sshpass, also inside longer names (GITHUB_TOKEN=, "db_password": "…"), and in an upper-case name or an object key before a suffix (SECRET_KEY_BASE=, API_KEY_V2=, DB_PASSWORD_PROD=; token_test: is kept); kept: code (`token = req.headers.authorization`, `password = getPassword()`; not a dotted value with a long random part, `access_token=ya29.a0Af…`), references (`TOKEN=$GITHUB_TOKEN`), and after ":" a type or literal (`password: string`, `secret: null`)',
    pattern: new RegExp(
      `(\\b[A-Za-z0-9_.-]*?${SECRET_WORD}${SECRET_SUFFIX})(["']?\\s*(?::=|=>|=|:)\\s*)("[^"\\n]*"|'[^'\\n]*'|\`[^\`\\n]*\`|[^\\s"'\`,;&}\\])]+)`,
      'gi',
    ),
    replace: (m, match, key, sep, value) => {
      const v = value!;
      if (v.startsWith('[REDACTED:')) return match;
      if (!ENDS_IN_SECRET_WORD.test(key!) && key !== key!.toUpperCase()) return match;
      const inner = /^["'`]/.test(v) ? v.slice(1, -1) : v;
      if (inner.trim() === '' || inner.startsWith('[REDACTED:')) return match;
      // `x == password`, `if token:`: a comparison or a block, not an assignment.
      if (sep!.trim() === '=' && /^=/.test(v)) return match;
      // A reference to where the secret lives is not the secret: `TOKEN=$GITHUB_TOKEN`, `key = process.env.KEY`.
      if (/^(?:\$|process\.env|os\.environ|env\.)/.test(v)) return match;
      if (
        !/^["'`]/.test(v) &&
        !hasRandomPart(v) &&
        (CODE_VALUE.test(v) || (sep!.trim() === ':' && DECLARATION.test(v)))
      )
        return match;
      const quote = /^["'`]/.test(v) ? v[0]! : '';
      return `${key}${sep}${quote}${m}${quote}`;
    },
  },
  {
    name: 'high-entropy',
    description:
      'a long random-looking hex (32+) or base64 (32+) string within 40 characters after key, secret, token, password, credential, auth, signature or bearer',
    pattern:
      /(\b(?:key|secret|token|password|passwd|credentials?|auth\w*|signature|bearer)\b[^\n]{0,40}?)([A-Za-z0-9+/_-]{32,}={0,2})/gi,
    replace: (m, match, head, token) => (looksRandom(token!) ? `${head}${m}` : match),
  },
];

/** Replaces every secret in `text`; `found` names the patterns that matched (once each). */
export function redact(text: string): { text: string; found: string[] } {
  const found = new Set<string>();
  let out = text;
  for (const p of SECRET_PATTERNS) {
    p.pattern.lastIndex = 0;
    out = out.replace(p.pattern, (match: string, ...rest: unknown[]) => {
      // String.replace passes the groups, then the offset and the whole string (and named groups).
      const groups = rest.slice(0, -2).filter((g) => typeof g === 'string' || g === undefined) as Array<
        string | undefined
      >;
      const m = marker(p.name);
      const replaced = p.replace ? p.replace(m, match, ...groups) : m;
      if (replaced !== match) found.add(p.name);
      return replaced;
    });
  }
  return { text: out, found: [...found] };
}

/** An object key named like a credential: `api_key`, `OPENAI_API_KEY`, `SECRET_KEY_BASE`, `db_password_prod`. */
const SECRET_KEY_NAME = new RegExp(`^[A-Za-z0-9_.-]*${SECRET_WORD}${SECRET_SUFFIX}$`, 'i');

/** `redact` over every string of a JSON-like value, keys included; other values are kept as they are. */
export function redactDeep<T>(value: T, found: Set<string> = new Set()): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const r = redact(v);
      for (const f of r.found) found.add(f);
      return r.text;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, child] of Object.entries(v)) {
        // A secret-named key keeps its name; its value is dropped whole, whatever its shape.
        if (SECRET_KEY_NAME.test(k) && child !== null && child !== '') {
          if (typeof child === 'string' || typeof child === 'number') {
            found.add('assignment');
            out[k] = marker('assignment');
            continue;
          }
        }
        out[walk(k) as string] = walk(child);
      }
      return out;
    }
    return v;
  };
  return walk(value) as T;
}

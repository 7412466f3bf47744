import { CairnError, type Embedder } from '@cairn/core';
import { DEFAULT_HASHING_OPTIONS, HashingEmbedder } from './hashing-embedder.js';
import { DEFAULT_OLLAMA_OPTIONS, OllamaEmbedder, type OllamaProbeInit } from './ollama-embedder.js';
import {
  DEFAULT_OPENAI_COMPATIBLE_OPTIONS,
  OpenAICompatibleEmbedder,
  type OpenAICompatibleProbeInit,
} from './openai-compatible-embedder.js';

/** A parsed embedder spec, as written in config (`--embedder ollama:nomic-embed-text`). */
export type EmbedderSpec =
  | { kind: 'hash'; dimensions?: number }
  | { kind: 'ollama'; model: string }
  | { kind: 'openai'; model: string };

/** The environment variables the remote specs read; empty values count as unset. */
export const EMBEDDER_ENV = Object.freeze({
  /** Ollama server root. Default: DEFAULT_OLLAMA_OPTIONS.baseUrl. */
  ollamaUrl: 'CAIRN_OLLAMA_URL',
  /** OpenAI-compatible API root with its version segment. Default: DEFAULT_OPENAI_COMPATIBLE_OPTIONS.baseUrl. */
  openaiBaseUrl: 'CAIRN_OPENAI_BASE_URL',
  /** Bearer key; required for api.openai.com, optional for self-hosted servers. */
  openaiApiKey: 'CAIRN_OPENAI_API_KEY',
  /** Shortened vector length to request (text-embedding-3 models); also the embedder's dimensions. */
  openaiDimensions: 'CAIRN_OPENAI_DIMENSIONS',
} as const);

/**
 * Options of createEmbedder and resolveEmbedder. There is no DEFAULT_* constant on purpose: every
 * default is "absent", and the real defaults live in the embedders' own DEFAULT_* constants.
 */
export interface EmbedderSpecOptions {
  /**
   * The vector length, when already known (e.g. read from a stored embedding space). A `hash:<dims>` or
   * CAIRN_OPENAI_DIMENSIONS that disagrees is refused with DIMENSION_MISMATCH.
   * @defaultValue undefined: hash uses 384; ollama and openai must probe (resolveEmbedder only)
   */
  dimensions?: number;
  /** Where the CAIRN_* variables are read. @defaultValue process.env */
  env?: Record<string, string | undefined>;
  /** Passed to remote embedders. @defaultValue globalThis.fetch */
  fetch?: typeof fetch;
}

/**
 * The most dimensions a `hash:<dims>` spec may ask for: past a few thousand a hashed vector holds nothing
 * more (a text has far fewer features), while each memory's vector costs 4 bytes a dimension in SQLite and
 * the graph; `hash:100000` was accepted, 400 KB a memory.
 */
export const MAX_HASH_DIMENSIONS = 4_096;

const ACCEPTED_FORMS = 'hash, hash:<dimensions>, ollama:<model>, openai:<model>';

function invalidSpec(spec: string, why: string): CairnError {
  return new CairnError(
    'INVALID_INPUT',
    `embedder spec ${JSON.stringify(spec)} ${why}; accepted forms: ${ACCEPTED_FORMS} (e.g. ollama:nomic-embed-text, openai:text-embedding-3-small)`,
    { field: 'embedder' },
  );
}

/**
 * Parses `hash`, `hash:<dimensions>`, `ollama:<model>` or `openai:<model>`. Only the first colon
 * separates: Ollama tags contain colons (`ollama:nomic-embed-text:v1.5`).
 */
export function parseEmbedderSpec(spec: string): EmbedderSpec {
  const s = spec.trim();
  const colon = s.indexOf(':');
  const kind = (colon < 0 ? s : s.slice(0, colon)).toLowerCase();
  const arg = colon < 0 ? undefined : s.slice(colon + 1).trim();
  switch (kind) {
    case 'hash': {
      if (arg === undefined) return { kind };
      if (!/^\d+$/.test(arg) || Number(arg) < 8 || Number(arg) > MAX_HASH_DIMENSIONS)
        throw invalidSpec(spec, `has dimensions that are not an integer in [8, ${MAX_HASH_DIMENSIONS}]`);
      return { kind, dimensions: Number(arg) };
    }
    case 'ollama':
    case 'openai': {
      if (!arg) throw invalidSpec(spec, 'names no model');
      if (/\s/.test(arg)) throw invalidSpec(spec, 'has whitespace in the model name');
      return { kind, model: arg };
    }
    default:
      throw invalidSpec(spec, s === '' ? 'is empty' : `has unknown kind ${JSON.stringify(kind)}`);
  }
}

function envValue(env: Record<string, string | undefined>, name: string): string | undefined {
  const v = env[name]?.trim();
  return v ? v : undefined;
}

function agreeingDimensions(a: number | undefined, b: number | undefined, what: string): number | undefined {
  if (a !== undefined && b !== undefined && a !== b) {
    throw new CairnError('DIMENSION_MISMATCH', `${what} says ${b} dimensions but ${a} were expected`, {
      expected: a,
      actual: b,
    });
  }
  return a ?? b;
}

type RemoteInit =
  | { kind: 'ollama'; init: OllamaProbeInit }
  | { kind: 'openai'; init: OpenAICompatibleProbeInit };

function remoteInit(
  spec: EmbedderSpec & { kind: 'ollama' | 'openai' },
  opts: EmbedderSpecOptions,
): RemoteInit {
  const env = opts.env ?? process.env;
  const fetchOpt = opts.fetch ? { fetch: opts.fetch } : {};
  if (spec.kind === 'ollama') {
    const baseUrl = envValue(env, EMBEDDER_ENV.ollamaUrl) ?? DEFAULT_OLLAMA_OPTIONS.baseUrl;
    const init: OllamaProbeInit = { model: spec.model, baseUrl, ...fetchOpt };
    if (opts.dimensions !== undefined) init.dimensions = opts.dimensions;
    return { kind: 'ollama', init };
  }
  const baseUrl = envValue(env, EMBEDDER_ENV.openaiBaseUrl) ?? DEFAULT_OPENAI_COMPATIBLE_OPTIONS.baseUrl;
  const apiKey = envValue(env, EMBEDDER_ENV.openaiApiKey);
  // Fail at start-up rather than with a 401 at the first batch; self-hosted servers need no key.
  if (!apiKey && /^https:\/\/api\.openai\.com(\/|$)/.test(baseUrl)) {
    throw new CairnError(
      'INVALID_INPUT',
      `embedder ${spec.kind}:${spec.model} calls ${baseUrl}, which needs an API key: set ${EMBEDDER_ENV.openaiApiKey}`,
      { field: EMBEDDER_ENV.openaiApiKey },
    );
  }
  const rawDims = envValue(env, EMBEDDER_ENV.openaiDimensions);
  let requestDimensions: number | undefined;
  if (rawDims !== undefined) {
    if (!/^\d+$/.test(rawDims) || Number(rawDims) < 1) {
      throw new CairnError(
        'INVALID_INPUT',
        `${EMBEDDER_ENV.openaiDimensions} must be a positive integer, got ${JSON.stringify(rawDims)}`,
        { field: EMBEDDER_ENV.openaiDimensions },
      );
    }
    requestDimensions = Number(rawDims);
  }
  const init: OpenAICompatibleProbeInit = { model: spec.model, baseUrl, ...fetchOpt };
  if (apiKey) init.apiKey = apiKey;
  if (requestDimensions !== undefined) init.requestDimensions = requestDimensions;
  const dimensions = agreeingDimensions(opts.dimensions, requestDimensions, EMBEDDER_ENV.openaiDimensions);
  if (dimensions !== undefined) init.dimensions = dimensions;
  return { kind: 'openai', init };
}

function hashEmbedder(spec: { dimensions?: number }, opts: EmbedderSpecOptions): HashingEmbedder {
  const dimensions = agreeingDimensions(
    opts.dimensions,
    spec.dimensions,
    `embedder spec hash:${spec.dimensions}`,
  );
  return new HashingEmbedder({ dimensions: dimensions ?? DEFAULT_HASHING_OPTIONS.dimensions });
}

/**
 * Builds the embedder a spec names without any network call, for when the dimensions are known (read
 * from a stored embedding space, or set by CAIRN_OPENAI_DIMENSIONS). A remote spec without dimensions
 * is refused: use resolveEmbedder to probe them.
 */
export function createEmbedder(spec: string | EmbedderSpec, opts: EmbedderSpecOptions = {}): Embedder {
  const parsed = typeof spec === 'string' ? parseEmbedderSpec(spec) : spec;
  if (parsed.kind === 'hash') return hashEmbedder(parsed, opts);
  const remote = remoteInit(parsed, opts);
  const dimensions = remote.init.dimensions;
  if (dimensions === undefined) {
    throw new CairnError(
      'INVALID_INPUT',
      `embedder ${parsed.kind}:${parsed.model} needs its dimensions to be built offline; pass them or use resolveEmbedder to probe the server`,
      { field: 'dimensions' },
    );
  }
  return remote.kind === 'ollama'
    ? new OllamaEmbedder({ ...remote.init, dimensions })
    : new OpenAICompatibleEmbedder({ ...remote.init, dimensions });
}

/**
 * Builds the embedder a spec names. When the dimensions are not known (no `dimensions` option, no
 * CAIRN_OPENAI_DIMENSIONS), one short text is embedded to learn them, so this fails fast with
 * BACKEND_UNAVAILABLE when the server is down; with known dimensions it makes no request.
 */
export async function resolveEmbedder(
  spec: string | EmbedderSpec,
  opts: EmbedderSpecOptions = {},
): Promise<Embedder> {
  const parsed = typeof spec === 'string' ? parseEmbedderSpec(spec) : spec;
  if (parsed.kind === 'hash') return hashEmbedder(parsed, opts);
  const remote = remoteInit(parsed, opts);
  if (remote.init.dimensions !== undefined) return createEmbedder(parsed, opts);
  return remote.kind === 'ollama'
    ? OllamaEmbedder.probe(remote.init)
    : OpenAICompatibleEmbedder.probe(remote.init);
}

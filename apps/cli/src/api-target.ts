import { CairnError } from '@cairn/core';
import type { CliEnv } from './env.js';

export interface ApiTargetFlags {
  dataDir?: string;
  api?: string;
  apiKey?: string;
}

/**
 * The Cairn HTTP API a command talks to instead of a data folder: --api, else CAIRN_API_URL; an explicit
 * --data-dir wins over the environment. Null means the data folder.
 */
export function apiTarget(flags: ApiTargetFlags, env: CliEnv): { baseUrl: string; apiKey?: string } | null {
  if (flags.dataDir !== undefined && flags.api !== undefined)
    throw new CairnError('INVALID_INPUT', 'give --data-dir (embedded) or --api (remote), not both', {
      field: 'api',
    });
  const baseUrl = flags.dataDir === undefined ? (flags.api ?? env.CAIRN_API_URL) : undefined;
  if (!baseUrl) return null;
  if (!/^https?:\/\/[^/]/.test(baseUrl))
    throw new CairnError('INVALID_INPUT', `--api must be an http:// or https:// URL, not "${baseUrl}"`, {
      field: 'api',
    });
  const apiKey = flags.apiKey ?? env.CAIRN_API_KEY;
  return apiKey ? { baseUrl, apiKey } : { baseUrl };
}

// This file is the public API of @cairn/client; named exports only.

export type * from '@cairn/api-contract';
export { CairnError, CairnErrorCode, type CairnErrorData, isCairnError } from '@cairn/core';
export { CairnClient, type CairnClientOptions } from './cairn-client.js';

import { ErrorBodySchema } from '@cairn/api-contract';

/** The error answers every API route documents, each in the one error shape. */
export const ERROR_RESPONSES = {
  400: ErrorBodySchema,
  401: ErrorBodySchema,
  403: ErrorBodySchema,
  404: ErrorBodySchema,
  413: ErrorBodySchema,
  429: ErrorBodySchema,
} as const;

import { CairnErrorCode } from '@cairn/core';
import { z } from 'zod';

/** The one error shape of every non-2xx response. */
export const ErrorBodySchema = z
  .object({
    error: z.object({
      code: z.enum(Object.values(CairnErrorCode) as [CairnErrorCode, ...CairnErrorCode[]]),
      message: z.string(),
      field: z.string().optional(),
    }),
  })
  .meta({ id: 'Error' });

export type ErrorBody = z.infer<typeof ErrorBodySchema>;

/** The HTTP status of each error code, in one exhaustive place. */
export function httpStatusOf(code: CairnErrorCode): number {
  switch (code) {
    case 'INVALID_INPUT':
    case 'DIMENSION_MISMATCH':
      return 400;
    case 'UNAUTHORIZED':
      return 401;
    case 'FORBIDDEN_NAMESPACE':
      return 403;
    case 'NOT_FOUND':
      return 404;
    case 'METHOD_NOT_ALLOWED':
      return 405;
    case 'PAYLOAD_TOO_LARGE':
      return 413;
    case 'WRITER_ELSEWHERE':
      return 409;
    case 'RATE_LIMITED':
      return 429;
    case 'BACKEND_UNAVAILABLE':
      return 503;
    case 'STORAGE_FULL':
      return 507;
    case 'STORAGE_ERROR':
    case 'INTERNAL':
      return 500;
    default: {
      const unreachable: never = code;
      return unreachable;
    }
  }
}

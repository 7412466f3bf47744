import { createRequire } from 'node:module';
import type { Logger } from 'pino';

/** pino's levels, least severe first; `silent` logs nothing. */
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export type LogLevel = (typeof LEVELS)[number];

/** What commands log with: pino's call shape, one method per level. */
export type CliLogger = Record<LogLevel, (data: object, msg?: string) => void>;

/**
 * A pino logger on stderr (stdout carries only results, so `cairn search --json | jq` always parses),
 * loaded with the first line at or above `level`: pino and its streams cost a fresh process 50–100 ms of
 * module loading, and most one-shot commands log nothing at the default level (warn). A synchronous
 * require (of pino's CommonJS entry) keeps logging synchronous for the callers.
 */
export function createLogger(level: string): CliLogger {
  const threshold = level === 'silent' ? LEVELS.length : LEVELS.indexOf(level as LogLevel);
  let logger: Logger | null = null;
  const at =
    (l: LogLevel, rank: number) =>
    (data: object, msg?: string): void => {
      if (rank < threshold) return;
      if (logger === null) {
        const { pino } = createRequire(import.meta.url)('pino') as typeof import('pino');
        logger = pino({ level, base: undefined }, pino.destination(2));
      }
      logger[l](data, msg);
    };
  return Object.fromEntries(LEVELS.map((l, rank) => [l, at(l, rank)])) as CliLogger;
}

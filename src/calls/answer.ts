import { statisticsOf } from '../queries/json-schema.js';
import type { QueryStatistics } from '../warehouse/types.js';
import type { RunResult } from './runner.js';

/**
 * How old something computed (or served) at `at` is at `now`, in whole seconds: HTTP's Age rule,
 * rounded down and never below 0. Every surface that says an answer's age says this one.
 */
export function ageSeconds(at: number, now: number): number {
  return Math.max(0, Math.floor((now - at) / 1000));
}

/** Whether an answer came from the cache: a hit, or another process's answer to the same call, waited for. */
export function fromCache(result: Pick<RunResult, 'cache'>): boolean {
  return result.cache === 'hit' || result.cache === 'shared';
}

/** What every answer says of itself besides its rows (serve's body, an MCP tool's result; `--stats` says it in words). */
export interface AnswerFacts {
  readonly truncated: boolean;
  readonly cached: boolean;
  readonly age_seconds: number;
  readonly statistics: QueryStatistics;
}

/** An answer's facts at `now`, as json-schema.ts's answerFacts declares them. */
export function answerFactsOf(result: RunResult, now: number): AnswerFacts {
  return { truncated: result.truncated, cached: fromCache(result), age_seconds: ageSeconds(result.computedAt, now), statistics: statisticsOf(result.statistics) };
}

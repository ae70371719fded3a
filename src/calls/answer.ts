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

/** Whether an answer came from the cache: a hit, another process's answer to the same call waited for, or an expired one while the warehouse is down. */
export function fromCache(result: Pick<RunResult, 'cache'>): boolean {
  return result.cache === 'hit' || result.cache === 'shared' || result.cache === 'stale';
}

/** What every answer says of itself besides its rows (serve's body, an MCP tool's result; `--stats` says it in words). */
export interface AnswerFacts {
  /** The version of the saved query that made it (docs/queries.md, "Versions"). */
  readonly version: number;
  readonly truncated: boolean;
  readonly cached: boolean;
  readonly age_seconds: number;
  /** Present (true) only on an expired answer served because no host of the warehouse answered. */
  readonly stale?: true;
  readonly statistics: QueryStatistics;
}

/** An answer's facts at `now`, as json-schema.ts's answerFacts declares them. */
export function answerFactsOf(result: RunResult, now: number): AnswerFacts {
  const facts = { version: result.query.version, truncated: result.truncated, cached: fromCache(result), age_seconds: ageSeconds(result.computedAt, now) };
  return result.cache === 'stale' ? { ...facts, stale: true, statistics: statisticsOf(result.statistics) } : { ...facts, statistics: statisticsOf(result.statistics) };
}

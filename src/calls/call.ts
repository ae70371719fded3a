import { QueryTimeoutError } from '../errors.js';
import type { PreparedCall } from './prepare.js';

/**
 * A call's time (CONTRACT §20: one deadline a call), made once where the call starts, below the cache
 * (a run's query, an export): its limit (the query's own `timeout:` below `--timeout`, never above
 * it), the instant it is up, and one signal that aborts then, or when the caller goes. Everything the
 * call does carries them to the warehouse (warehouse/types.ts's CallContext): its wait for a slot, each
 * host it tries, reading the answer, stopping the query. No room keeps a timer of its own for the call.
 */
export interface CallTime {
  readonly seconds: number;
  /** When the call's time is up (epoch ms). */
  readonly deadline: number;
  /** Aborted at the deadline (a QueryTimeoutError that ran past its limit), or with the caller's own reason. */
  readonly signal: AbortSignal;
  /** A failure as the caller reads it: one past the limit said naming it and where it holds, any other as it is. */
  passed(err: unknown, location: string): unknown;
  /** The call has ended: its deadline's timer goes. */
  end(): void;
}

/** The time of a call that starts now; `gone`, when the caller stops waiting. */
export function callTime(call: PreparedCall, globalSeconds: number, gone?: AbortSignal): CallTime {
  const own = call.query.timeoutSeconds ?? Infinity;
  const seconds = Math.min(own, globalSeconds);
  const deadline = Date.now() + seconds * 1000;
  const up = new AbortController();
  const timer = setTimeout(() => up.abort(new QueryTimeoutError(`${call.query.name} ran past its time limit.`, { ranPastLimit: true })), seconds * 1000);
  const signal = gone ? AbortSignal.any([gone, up.signal]) : up.signal;
  return {
    seconds,
    deadline,
    signal,
    passed(err, location) {
      if (!(err instanceof QueryTimeoutError && err.ranPastLimit)) return err;
      const forCaller = `${call.query.name} ran past its time limit of ${seconds} s (${seconds === own ? 'its own timeout' : '--timeout'}).`;
      // The server's log (and the command line) has where, too: said once, the limit once.
      return new QueryTimeoutError(`${forCaller.slice(0, -1)} on ${location}.`, { cause: err, forCaller, ranPastLimit: true });
    },
    end: () => clearTimeout(timer),
  };
}

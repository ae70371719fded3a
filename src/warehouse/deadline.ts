import type { ClickHouseSettings } from '@clickhouse/client';
import { QueryTimeoutError } from '../errors.js';

/**
 * A statement's settings as its call's deadline leaves them when it starts (`leftMs` of it): the
 * engine's own time limit, where savedq sets one, no more than that (CONTRACT §20: one deadline a call,
 * the wait for a slot and every earlier attempt counted).
 */
export function withinDeadline(settings: ClickHouseSettings | undefined, leftMs: number): ClickHouseSettings | undefined {
  if (settings?.max_execution_time === undefined) return settings;
  const left = Math.max(0.001, Math.ceil(leftMs) / 1000);
  return settings.max_execution_time <= left ? settings : { ...settings, max_execution_time: left };
}

/** A signal that aborts at a deadline (epoch ms), with the time limit passed as its reason. */
export function deadlineSignal(deadline: number): AbortSignal {
  const up = new AbortController();
  const timer = setTimeout(() => up.abort(new QueryTimeoutError('the call ran past its time limit.', { ranPastLimit: true })), Math.max(0, deadline - Date.now()));
  timer.unref();
  return up.signal;
}

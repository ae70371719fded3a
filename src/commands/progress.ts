import { resolveProgress } from '../config.js';
import type { CommonOptions, Io } from './io.js';

/** A one-line progress display on standard error, only for a person at a terminal. */
export interface Progress {
  update(text: string): void;
  done(): void;
}

const quiet: Progress = { update: () => undefined, done: () => undefined };

/** Progress on a terminal; nothing in a pipe, under CI, or with --quiet. */
export function progress(io: Io, options: CommonOptions, everyMs = 200): Progress {
  if (!resolveProgress(options.quiet, io.stderr.isTTY === true, io.env)) return quiet;
  let last = 0;
  let shown = false;
  return {
    update(text) {
      const now = Date.now();
      if (now - last < everyMs) return;
      last = now;
      shown = true;
      io.stderr.write(`\r\u001b[K${text}`);
    },
    done() {
      if (shown) io.stderr.write('\r\u001b[K');
    },
  };
}

/** "12,345 rows, 3.4 MB, 56,789 rows/s, 42%" */
export function loadProgressText(table: string, rows: number, bytes: number | undefined, startedMs: number, fraction?: number): string {
  const seconds = Math.max(0.001, (Date.now() - startedMs) / 1000);
  const parts = [`loading ${table}: ${rows.toLocaleString('en-US')} rows`];
  if (bytes !== undefined) parts.push(`${(bytes / 1e6).toFixed(1)} MB`);
  parts.push(`${Math.round(rows / seconds).toLocaleString('en-US')} rows/s`);
  if (fraction !== undefined) parts.push(`${Math.min(100, Math.floor(fraction * 100))}%`);
  return parts.join(', ');
}

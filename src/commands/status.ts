import type { Savedq } from '../library.js';
import { statusOf, type StatusReport } from '../admin.js';
import type { Row } from '../queries/types.js';
import { StoreUnreachable } from '../store/health.js';
import { plural } from '../words.js';
import { proseWidth, writeOut, writeRows, type CommonOptions, type Io } from './io.js';
import { wrapped } from '../output/wrap.js';

/** Options of `savedq status`. */
export interface StatusOptions extends CommonOptions {
  /** text (lines for people), or json. */
  readonly format: string;
}

const PROCESS_FIELDS = [
  { name: 'host', type: 'string', key: true },
  { name: 'pid', type: 'integer' },
  { name: 'version', type: 'string' },
  { name: 'role', type: 'string' },
  { name: 'seen_seconds_ago', type: 'integer' },
] as const;

const BACKENDS = { sqlite: 'the SQLite file', postgres: 'PostgreSQL' } as const;

/**
 * `savedq status`: where savedq keeps what it keeps between calls and whether it answers, where the
 * data is, what is cached, and the processes that shared the store in the last minute. Exit 1 when the
 * store does not answer (what a monitor's check wants), after saying what it could.
 */
export async function statusCommand(lib: Savedq, options: StatusOptions, io: Io): Promise<StatusReport> {
  const status = await statusOf(lib);
  const now = Date.now();
  const processes: Row[] = (status.processes ?? []).map((p) => ({ host: p.host, pid: p.pid, version: p.version, role: p.role, seen_seconds_ago: Math.max(0, Math.round((now - p.seen) / 1000)) }));
  const { probe } = status.store;
  if (options.format === 'json') {
    const json = {
      store: {
        backend: status.store.backend,
        location: status.store.location,
        up: probe.up,
        seconds: Number(probe.seconds.toFixed(4)),
        ...(probe.up ? (probe.tables ? { schema: probe.tables.schema, tables_version: probe.tables.version ?? null } : {}) : { reason: probe.reason }),
      },
      warehouse: status.warehouse,
      ...(status.hosts ? { hosts: status.hosts } : {}),
      ...(status.data ? { data: { generation: status.data.current || null, loading: status.data.loading } } : {}),
      ...(status.cached ? { cached: { calls: status.cached.calls, bytes: status.cached.bytes, max_bytes: status.cached.maxBytes } } : {}),
      memory: { max_bytes: status.memory.maxBytes },
      ...(status.processes ? { processes } : {}),
    };
    await writeOut(io.stdout, `${JSON.stringify(json, null, 2)}\n`);
  } else {
    // Each labelled line wrapped at word breaks to a terminal's width, under its text; a line under the
    // one before (its label blank) wrapped as its text at its own indent (the wrapping would take the
    // indent for spaces to drop), an item (`- …`) hanging under its first word.
    const lines = statusLines(status).map((line) => {
      if (!line.startsWith(' ')) return wrapped(line, 0, 11, proseWidth(io));
      const text = line.trimStart();
      const indent = line.length - text.length;
      return wrapped(text, indent, text.startsWith('- ') ? indent + 2 : indent, proseWidth(io));
    });
    await writeOut(io.stdout, lines.join('\n') + '\n');
    if (processes.length > 0) await writeRows(io, options, 'table', processes, PROCESS_FIELDS);
  }
  if (!probe.up) throw new StoreUnreachable(`the store ${status.store.location} does not answer (${probe.reason}).`);
  return status;
}

/** The report as labelled lines, for people. */
function statusLines(status: StatusReport): string[] {
  const { probe } = status.store;
  const line = (label: string, text: string) => `${label.padEnd(10)} ${text}`;
  const lines = [line('store', `${status.store.location} (${BACKENDS[status.store.backend]})`)];
  if (!probe.up) lines.push(line('', `does not answer: ${probe.reason}`));
  else {
    const tables = probe.tables === undefined ? '' : probe.tables.version === undefined ? `; no tables of savedq's yet in schema ${probe.tables.schema} (the first process to need them makes them)` : `; savedq's tables in schema ${probe.tables.schema}, version ${probe.tables.version}`;
    lines.push(line('', `answers in ${milliseconds(probe.seconds)}${tables}`));
  }
  if (status.hosts === undefined) lines.push(line('warehouse', status.warehouse));
  else {
    // Each host on a line of its own: whether it answers, and why not. Not since when: this command
    // asked each host just now, and knows nothing of when one went down.
    for (const [i, h] of status.hosts.entries()) {
      lines.push(line(i === 0 ? 'warehouse' : '', `${h.host}: ${h.state === 'up' ? 'answers' : `does not answer (${h.last_error ?? 'no answer'})`}`));
      // Its user's profile, and what savedq does without what the user may not set.
      if (h.user !== undefined) {
        lines.push(line('', `  its user ${h.user.readonly === 1 ? 'is read-only (readonly=1)' : h.user.readonly === 2 ? 'is read-only but for settings (readonly=2)' : "has settings bounded by its profile"}:`));
        for (const cost of h.user.costs) lines.push(line('', `  - ${cost}`));
      }
    }
    if (status.hosts.every((h) => h.state === 'down')) lines.push(line('', 'no host answers: calls are answered from the cache where they can be (stale_if_error)'));
  }
  if (status.data) lines.push(line('data', `${status.data.current === '' ? 'no load through savedq yet' : `generation ${status.data.current}`}${status.data.loading ? '; a load is under way' : ''}`));
  if (status.cached) lines.push(line('cached', `${plural(status.cached.calls, 'call')}, ${megabytes(status.cached.bytes)} of at most ${megabytes(status.cached.maxBytes)}`));
  lines.push(line('memory', `answers a process keeps to give again at once: at most ${megabytes(status.memory.maxBytes)} (--memory-mb)`));
  if (status.processes) lines.push(line('processes', status.processes.length === 0 ? 'none shared the store in the last minute' : 'those that shared the store in the last minute:'));
  return lines;
}

function milliseconds(seconds: number): string {
  return `${seconds < 0.01 ? (seconds * 1000).toFixed(1) : Math.round(seconds * 1000)} ms`;
}

function megabytes(bytes: number): string {
  const mb = bytes / 2 ** 20;
  return `${Number.isInteger(mb) ? mb : mb.toFixed(1)} MB`;
}

import type { OutcomeNames } from '../calls/outcomes.js';
import { ALERT_STATES, type Store } from '../store/types.js';
import type * as PromClient from 'prom-client';
import type { EngineQueue, WarehouseHosts } from '../warehouse/types.js';

/** What serve counts for its operators (README, "Handing serve to others": the series and what each means). */
export interface Metrics {
  /** An answered request: its query (or path), status, seconds, and for a query its cache outcome. */
  request(query: string, status: number, seconds: number, outcome: OutcomeNames | undefined): void;
  rateLimited(): void;
  /** A caller's SQL the sandbox refused, by the query it was sent to. */
  sandboxRefused(query: string): void;
  /** A query run (not a cache hit): the rows and bytes the engine read for it. */
  ran(query: string, rowsRead: number, bytesRead: number): void;
  warmed(outcome: 'refreshed' | 'failed', n: number): void;
  /** An export ended: whole, failed (cut) or stopped (its caller went), its rows (undefined: a server's binary formats, uncounted) and bytes. */
  exported(query: string, format: string, outcome: 'whole' | 'failed' | 'stopped', rows: number | undefined, bytes: number): void;
  /** Every alert's state after serve's latest turn of the alerts (null: never evaluated). */
  alertStates(states: ReadonlyMap<string, string | null>): void;
  /** A notification serve tried to deliver: delivered, failed (tried again later) or given up. */
  notified(alert: string, outcome: 'delivered' | 'failed' | 'given_up'): void;
  /** The Prometheus text format, and its content type. */
  text(): Promise<{ body: string; contentType: string }>;
}

type Labels = Record<string, string>;
/** A metric as prom-client's registry reads it (the shape of its own metrics' get()). */
interface MetricLike {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly aggregator: 'sum';
  get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: { metricName?: string; labels: Labels; value: number }[] }>;
}

/**
 * A counter kept as plain numbers by label set, read by prom-client's registry on each scrape. prom-client's
 * own counters hash their labels on every inc, a large part of a cached answer's time on a busy
 * server (docs/performance.md).
 */
class Tally {
  readonly #values = new Map<string, { labels: Labels; value: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  inc(key: string, labels: () => Labels, by = 1): void {
    this.entry(key, labels).value += by;
  }

  /** The tally of a label set, to count on directly (a busy caller keeps it). */
  entry(key: string, labels: () => Labels): { value: number } {
    let entry = this.#values.get(key);
    if (!entry) {
      entry = { labels: labels(), value: 0 };
      this.#values.set(key, entry);
    }
    return entry;
  }

  metric(): MetricLike {
    const { name, help } = this;
    return { name, help, type: 'counter', aggregator: 'sum', get: async () => ({ name, help, type: 'counter', aggregator: 'sum', values: [...this.#values.values()] }) };
  }
}

/** A histogram kept as bucket counts by label set, read by prom-client's registry on each scrape. */
class TalliedHistogram {
  readonly #values = new Map<string, { labels: Labels; buckets: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly bounds: readonly number[],
  ) {}

  /** The tally of a label set, to observe into directly. */
  entry(key: string, labels: () => Labels): { buckets: number[]; sum: number; count: number } {
    let entry = this.#values.get(key);
    if (!entry) {
      entry = { labels: labels(), buckets: this.bounds.map(() => 0), sum: 0, count: 0 };
      this.#values.set(key, entry);
    }
    return entry;
  }

  observe(entry: { buckets: number[]; sum: number; count: number }, seconds: number): void {
    let i = 0;
    while (i < this.bounds.length && seconds > (this.bounds[i] as number)) i += 1;
    if (i < this.bounds.length) entry.buckets[i] = (entry.buckets[i] ?? 0) + 1;
    entry.sum += seconds;
    entry.count += 1;
  }

  metric(): MetricLike {
    const { name, help, bounds } = this;
    return {
      name,
      help,
      type: 'histogram',
      aggregator: 'sum',
      get: async () => ({
        name,
        help,
        type: 'histogram',
        aggregator: 'sum',
        values: [...this.#values.values()].flatMap(({ labels, buckets, sum, count }) => {
          let cumulative = 0;
          return [
            ...bounds.map((le, i) => ({ metricName: `${name}_bucket`, labels: { ...labels, le: String(le) }, value: (cumulative += buckets[i] ?? 0) })),
            { metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: count },
            { metricName: `${name}_sum`, labels, value: sum },
            { metricName: `${name}_count`, labels, value: count },
          ];
        }),
      }),
    };
  }
}

/** The metrics of a serve: prom-client's registry, format and the process's own (process_*, nodejs_*), loaded by serve only. */
export async function serveMetrics(queue: () => EngineQueue | undefined, store?: Pick<Store, 'up' | 'observe'>, hosts?: () => WarehouseHosts | undefined): Promise<Metrics> {
  const prom = (await import('prom-client'));
  const registry = new prom.Registry();
  prom.collectDefaultMetrics({ register: registry });
  const requests = new Tally('savedq_requests_total', 'Requests answered, by query (or path) and status.');
  const duration = new TalliedHistogram('savedq_request_duration_seconds', 'Time to answer a request, by query (or path).', [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]);
  const cache = new Tally('savedq_cache_total', "Answers of queries by cache outcome: hit, miss, shared (another process's answer waited for), bypass (the store not reached), or off (not cached).");
  const limited = new Tally('savedq_rate_limited_total', 'Requests refused (429) because their caller was past its rate limit.');
  const warm = new Tally('savedq_warm_total', 'Cached calls serve refreshed while it runs, by outcome.');
  const refused = new Tally('savedq_sandbox_refused_total', "Callers' SQL the sandbox refused, by the query it was sent to.");
  const rowsRead = new Tally('savedq_rows_read_total', 'Rows the engine read for the queries this server ran (once a run, not a cache hit), by query.');
  const bytesRead = new Tally('savedq_bytes_read_total', 'Bytes the engine read for the queries this server ran (once a run, not a cache hit), by query.');
  for (const metric of [requests, duration, cache, limited, warm, refused, rowsRead, bytesRead]) registry.registerMetric(metric.metric() as unknown as PromClient.Metric);
  new prom.Gauge({
    name: 'savedq_engine_queue_depth',
    help: "Statements waiting for the warehouse (calls of this serve, and on the embedded engine the other savedq processes').",
    registers: [registry],
    collect() {
      this.set(queue()?.waiting ?? 0);
    },
  });
  if (store) {
    // The store (docs/scaling.md): whether it answers, and how long each kind of operation takes it.
    new prom.Gauge({
      name: 'savedq_store_up',
      help: 'Whether the store (the cache file, or the shared PostgreSQL) answered its last operation: 1 or 0.',
      registers: [registry],
      collect() {
        this.set(store.up ? 1 : 0);
      },
    });
    const storeSeconds = new TalliedHistogram('savedq_store_seconds', "Time the store took, by operation (get, set, served, lease, generation, …).", [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]);
    registry.registerMetric(storeSeconds.metric() as unknown as PromClient.Metric);
    store.observe((operation, seconds) => storeSeconds.observe(storeSeconds.entry(operation, () => ({ operation })), seconds));
  }
  // The hosts of a server warehouse (docs/scaling.md): each one's state, statements moved off it, queries stopped.
  new prom.Gauge({
    name: 'savedq_warehouse_up',
    help: 'Whether each host of the warehouse answers, by host (its URL without password): 1 or 0.',
    labelNames: ['host'],
    registers: [registry],
    collect() {
      this.reset();
      for (const h of hosts?.()?.hosts ?? []) this.set({ host: h.host }, h.state === 'up' ? 1 : 0);
    },
  });
  new prom.Counter({
    name: 'savedq_warehouse_failovers_total',
    help: 'Statements moved from a host of the warehouse to another (the host refused, reset or did not connect), by the host moved from.',
    labelNames: ['host'],
    registers: [registry],
    collect() {
      this.reset();
      for (const h of hosts?.()?.hosts ?? []) this.inc({ host: h.host }, h.failovers);
    },
  });
  new prom.Counter({
    name: 'savedq_warehouse_cancelled_total',
    help: 'Queries savedq gave up on (a timeout, a caller gone) and stopped on their host (the connection closed, KILL QUERY).',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(hosts?.()?.cancelled ?? 0);
    },
  });
  const stale = new Tally('savedq_answers_stale_total', "Expired answers served from the cache because no host of the warehouse answered (X-Cache: STALE), by query.");
  registry.registerMetric(stale.metric() as unknown as PromClient.Metric);
  let alertStates: ReadonlyMap<string, string | null> = new Map();
  new prom.Gauge({
    name: 'savedq_alert_state',
    help: "1 for each alert's state, 0 for its other states, as of serve's latest turn of the alerts (every 30 s).",
    labelNames: ['alert', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [alert, current] of alertStates) for (const state of ALERT_STATES) this.set({ alert, state }, state === current ? 1 : 0);
    },
  });
  const notifications = new Tally('savedq_alert_notifications_total', 'Notifications of alerts serve tried to deliver, by alert and outcome: delivered, failed (tried again later) or given_up.');
  registry.registerMetric(notifications.metric() as unknown as PromClient.Metric);
  const exports = new Tally('savedq_exports_total', 'Exports (/api/endpoints/export/…) that ended, by query, format and outcome: whole, failed (the stream cut) or stopped (the caller went away).');
  registry.registerMetric(exports.metric() as unknown as PromClient.Metric);
  const exportRows = new Tally('savedq_export_rows_total', "Rows exports wrote, by query and format (a server warehouse's Parquet and Arrow do not say their rows: not counted).");
  registry.registerMetric(exportRows.metric() as unknown as PromClient.Metric);
  const exportBytes = new Tally('savedq_export_bytes_total', 'Bytes exports wrote, by query and format.');
  registry.registerMetric(exportBytes.metric() as unknown as PromClient.Metric);
  const ownPaths = new Set(['/health', '/openapi.json', '/metrics', 'preflight']);
  limited.inc('', () => ({}), 0);
  // The three tallies of each (query, status, outcome), found with one lookup a request.
  type Series = { requests: { value: number }; duration: ReturnType<TalliedHistogram['entry']>; cache: { value: number } | undefined };
  const series = new Map<string, Series>();
  let last: { query: string; status: number; outcome: OutcomeNames | undefined; s: Series } | undefined;
  return {
    request(query, status, seconds, outcome) {
      if (outcome?.metric === 'stale') stale.inc(query, () => ({ query }));
      // A busy server answers the same call again and again: its series is the one just used.
      if (last && last.query === query && last.status === status && last.outcome === outcome) {
        last.s.requests.value += 1;
        duration.observe(last.s.duration, seconds);
        if (last.s.cache) last.s.cache.value += 1;
        return;
      }
      const key = `${query}\n${status}\n${outcome?.metric ?? '-'}`;
      let s = series.get(key);
      if (!s) {
        const counted = status === 200 ? outcome?.metric : undefined;
        s = {
          requests: requests.entry(`${query}\n${status}`, () => ({ query, status: String(status) })),
          duration: duration.entry(query, () => ({ query })),
          cache: counted !== undefined && !ownPaths.has(query) ? cache.entry(`${query}\n${counted}`, () => ({ query, outcome: counted })) : undefined,
        };
        series.set(key, s);
      }
      last = { query, status, outcome, s };
      s.requests.value += 1;
      duration.observe(s.duration, seconds);
      if (s.cache) s.cache.value += 1;
    },
    rateLimited: () => limited.inc('', () => ({})),
    sandboxRefused: (query) => refused.inc(query, () => ({ query })),
    ran: (query, rows, bytes) => {
      rowsRead.inc(query, () => ({ query }), rows);
      bytesRead.inc(query, () => ({ query }), bytes);
    },
    warmed: (outcome, n) => warm.inc(outcome, () => ({ outcome }), n),
    exported: (query, format, outcome, rows, bytes) => {
      exports.inc(`${query}\n${format}\n${outcome}`, () => ({ query, format, outcome }));
      if (rows !== undefined) exportRows.inc(`${query}\n${format}`, () => ({ query, format }), rows);
      exportBytes.inc(`${query}\n${format}`, () => ({ query, format }), bytes);
    },
    alertStates: (states) => (alertStates = states),
    notified: (alert, outcome) => notifications.inc(`${alert}\n${outcome}`, () => ({ alert, outcome })),
    text: async () => ({ body: await registry.metrics(), contentType: registry.contentType }),
  };
}

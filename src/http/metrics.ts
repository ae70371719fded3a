import type * as PromClient from 'prom-client';
import type { EngineQueue } from '../warehouse/types.js';

/** What serve counts for its operators (README, "Handing serve to others": the series and what each means). */
export interface Metrics {
  /** An answered request: its query (or path), status, seconds, and for a query its cache outcome. */
  request(query: string, status: number, seconds: number, cache: string): void;
  rateLimited(): void;
  warmed(outcome: 'refreshed' | 'failed', n: number): void;
  /** The Prometheus text format, and its content type. */
  text(): Promise<{ body: string; contentType: string }>;
}

/** The metrics of a serve, with prom-client (loaded by serve only), and the process's own (process_*, nodejs_*). */
export async function serveMetrics(queue: () => EngineQueue | undefined): Promise<Metrics> {
  const prom = (await import('prom-client')) as typeof PromClient;
  const registry = new prom.Registry();
  prom.collectDefaultMetrics({ register: registry });
  const requests = new prom.Counter({ name: 'savedq_requests_total', help: 'Requests answered, by query (or path) and status.', labelNames: ['query', 'status'], registers: [registry] });
  const duration = new prom.Histogram({
    name: 'savedq_request_duration_seconds',
    help: 'Time to answer a request, by query (or path).',
    labelNames: ['query'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const cache = new prom.Counter({ name: 'savedq_cache_total', help: 'Answers of queries by cache outcome: hit, miss, or off (not cached, or bypassed).', labelNames: ['query', 'outcome'], registers: [registry] });
  const limited = new prom.Counter({ name: 'savedq_rate_limited_total', help: 'Requests refused (429) because their caller was past its rate limit.', registers: [registry] });
  const warm = new prom.Counter({ name: 'savedq_warm_total', help: 'Cached calls serve refreshed while it runs, by outcome.', labelNames: ['outcome'], registers: [registry] });
  new prom.Gauge({
    name: 'savedq_engine_queue_depth',
    help: "Statements waiting for the embedded engine (calls of this serve and the other savedq processes').",
    registers: [registry],
    collect() {
      this.set(queue()?.waiting ?? 0);
    },
  });
  const outcomes: Record<string, string> = { HIT: 'hit', MISS: 'miss', '-': 'off' };
  return {
    request(query, status, seconds, outcome) {
      requests.inc({ query, status: String(status) });
      duration.observe({ query }, seconds);
      if (status === 200 && outcome in outcomes && query !== '/health' && query !== '/openapi.json' && query !== '/metrics') cache.inc({ query, outcome: outcomes[outcome] as string });
    },
    rateLimited: () => limited.inc(),
    warmed: (outcome, n) => warm.inc({ outcome }, n),
    text: async () => ({ body: await registry.metrics(), contentType: registry.contentType }),
  };
}

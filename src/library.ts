import type { Config } from './config.js';
import { InputError } from './errors.js';
import { normaliseParams, quoteValue, type RawParams } from './endpoints/params.js';
import { findEndpoint } from './endpoints/registry.js';
import { executeEndpoint } from './endpoints/runner.js';
import type { EndpointDefinition, NormalisedParams, Row } from './endpoints/types.js';
import { microsFromDate, parseIsoTimestamp, toIsoMicros, type Micros } from './time.js';
import type { Warehouse } from './warehouse/index.js';

/** Where "now" comes from; tests inject a fixed or moving clock. */
export type Clock = () => number;

/** What `run` does with the results cache. */
export type CacheMode = 'use' | 'bypass' | 'refresh';

/** A request to run a saved query. */
export interface RunRequest {
  /** Endpoint name or id. */
  readonly endpoint: string;
  readonly params: RawParams;
  /** ISO 8601 instant to run the query as of; default: now. */
  readonly at?: string | undefined;
  readonly cache?: CacheMode;
  readonly signal?: AbortSignal | undefined;
}

/** A validated call: the endpoint, its normalised parameters, and the instant it runs as of. */
export interface PreparedCall {
  readonly endpoint: EndpointDefinition;
  readonly params: NormalisedParams;
  /** The instant given with --at, or undefined for "the time the query runs". */
  readonly at: Micros | undefined;
}

/** The answer to a run. */
export interface RunResult {
  readonly endpoint: EndpointDefinition;
  readonly params: NormalisedParams;
  readonly rows: Row[];
  /** `hit`: served from the cache; `miss`: computed (and stored); `off`: not cacheable or bypassed. */
  readonly cache: 'hit' | 'miss' | 'off';
  /** When the rows were computed (epoch ms). */
  readonly computedAt: number;
}

/** Validates a request without running anything; bad input throws an InputError or NotFoundError. */
export function prepareCall(request: Pick<RunRequest, 'endpoint' | 'params' | 'at'>): PreparedCall {
  const endpoint = findEndpoint(request.endpoint);
  const params = normaliseParams(endpoint, request.params);
  let at: Micros | undefined;
  if (request.at !== undefined) {
    at = parseIsoTimestamp(request.at);
    if (at === undefined) {
      throw new InputError(`invalid --at ${quoteValue(request.at)}: expected an ISO 8601 timestamp such as 2026-01-31T12:00:00Z.`);
    }
  }
  return { endpoint, params, at };
}

/** The canonical text of an --at instant, for cache keys and messages. */
export function atText(at: Micros | undefined): string {
  return at === undefined ? '' : toIsoMicros(at);
}

/**
 * The endpoint library: every surface (CLI commands, HTTP) goes through it. It opens the warehouse only
 * when a query must actually run, and closes it on `close()`.
 */
export class Savedq {
  readonly config: Config;
  readonly clock: Clock;
  #warehouse: Promise<Warehouse> | undefined;

  constructor(config: Config, options: { clock?: Clock } = {}) {
    this.config = config;
    this.clock = options.clock ?? Date.now;
  }

  /** The warehouse, opened on first use (the engine and the client are imported only then). */
  warehouse(): Promise<Warehouse> {
    if (!this.#warehouse) {
      this.#warehouse = import('./warehouse/index.js').then((m) => m.openWarehouse(this.config));
      this.#warehouse.catch(() => {
        this.#warehouse = undefined;
      });
    }
    return this.#warehouse;
  }

  /** Runs a saved query. */
  async run(request: RunRequest): Promise<RunResult> {
    const call = prepareCall(request);
    return this.execute(call, request.signal);
  }

  /** Runs a prepared call on the warehouse, bypassing any cache. */
  async execute(call: PreparedCall, signal?: AbortSignal): Promise<RunResult> {
    const startedAt = this.clock();
    const warehouse = await this.warehouse();
    const rows = await executeEndpoint(warehouse, call.endpoint, call.params, {
      now: call.at ?? microsFromDate(startedAt),
      timeoutSeconds: this.config.queryTimeoutSeconds,
      signal,
    });
    return { endpoint: call.endpoint, params: call.params, rows, cache: 'off', computedAt: startedAt };
  }

  /** Releases the warehouse (and with it the embedded data directory). */
  async close(): Promise<void> {
    const warehouse = this.#warehouse;
    this.#warehouse = undefined;
    if (warehouse) await (await warehouse.catch(() => undefined))?.close();
  }
}

import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { redactUrl } from '../config.js';
import { errnoText } from '../errno.js';
import { nodeCrypto } from '../lazy.js';
import { QueryTimeoutError, WarehouseError, WarehouseUnreachableError } from '../errors.js';
import { BASE_SETTINGS, clientRun } from './client.js';
import { withinDeadline } from './deadline.js';
import { isNetworkFailure } from './errors.js';
import { ANY_SETTING, asProfileAllows, changeText, hostUser, isProfileRefusal, learnProfile, SENT_SETTINGS, type HostProfile } from './profile.js';
import { loadClient } from './load-client.js';
import { stageOnServer } from './remote.js';
import { failingAs, whenEnded } from './streams.js';
import type { Answers, Statement, StatementKind, Statements, WarehouseHosts, HostStatus } from './types.js';

// The hosts of one warehouse (docs/scaling.md, "Several hosts"). @clickhouse/client speaks to one host
// and has no multi-host support (clickhouse-js #172): each host is a client of its own, and the choice
// of host, the probes and the retry of reads on another host are written here, and only here.

/** A host that has not taken the connection in this long is as down as one that refused it. */
const CONNECT_MS = 2000;
/** A probe (/ping) not answered in this long marks its host down. */
const PROBE_MS = 2000;
/** A host down is probed at first after this long, then twice as long each time, up to PROBE_MAX_MS. */
const PROBE_FIRST_MS = 250;
const PROBE_MAX_MS = 5000;
/**
 * A KILL QUERY the host does not take in this long is left to the query's max_execution_time: a call
 * is stopped within a second of its deadline (a command waits for its KILLs before it exits).
 */
const KILL_MS = 1000;
/** How long past its time limit a statement made for no call (savedq's own) waits for the server's own timeout. */
const GRACE_MS = 500;
/** A read whose answer has not begun this long has its host asked /ping on another connection (hung, or only slow). */
const HUNG_AFTER_MS = 1000;

/** A host gone down or come back. */
export interface HostChange {
  readonly host: string;
  readonly up: boolean;
  readonly reason?: string;
  /** The hosts that answer now. */
  readonly answering: number;
}

/** How a process picks among the hosts: the first that answers, or one picked at random and kept. */
export type LoadBalance = 'in-order' | 'random';

export interface HostsOptions {
  /** Each host's URL (user, password and database of its own). */
  readonly urls: readonly string[];
  readonly loadBalance: LoadBalance;
  /** The call's time limit: the server enforces it (max_execution_time); savedq gives up just past it. */
  readonly timeoutSeconds: number;
  /** Told once when a host goes down (with why, and how many others answer) and once when it answers again. */
  readonly onChange?: ((change: HostChange) => void) | undefined;
  /**
   * Hosts another process found down lately (the store's record, by shown URL): tried last, and probed
   * in the background, until one answers its probe.
   */
  readonly suspects?: ReadonlyMap<string, { readonly since: number; readonly reason: string }> | undefined;
  /** Records a host found down (with when and why), or clears its record once it answers a probe: the store's, for the next process. */
  readonly record?: ((host: string, down: { readonly since: number; readonly reason: string } | undefined) => void) | undefined;
}

/** The settings of every read's request: savedq's output formats (client.ts), and the server stops the query when savedq closes its connection. */
const READ_REQUEST: ClickHouseSettings = { ...BASE_SETTINGS, cancel_http_readonly_queries_on_client_close: 1, readonly: '2' };

/**
 * An agent whose connections must be made within CONNECT_MS (Node's agents wait for the kernel's
 * timeout, minutes): the client takes it as its `http_agent`, keep-alive as its own would be.
 */
function agentFor(url: string): HttpAgent {
  const agent = url.startsWith('https:') ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
  const create = agent.createConnection.bind(agent) as (...args: unknown[]) => Socket;
  agent.createConnection = (...args: unknown[]) => {
    const socket = create(...args);
    const timer = setTimeout(() => socket.destroy(Object.assign(new Error(`no connection within ${CONNECT_MS / 1000} s`), { code: 'ETIMEDOUT' })), CONNECT_MS);
    const made = () => clearTimeout(timer);
    socket.once('connect', made).once('close', made);
    return socket;
  };
  return agent;
}

/** One host: its client, and whether it answers. */
class Host {
  readonly shown: string;
  readonly location: string;
  readonly client: ClickHouseClient;
  readonly run: Statements['run'];
  up = true;
  since = new Date();
  lastError: string | undefined;
  failovers = 0;
  /** Found down by another process lately (the store says): tried after the others until it answers a probe. */
  suspect = false;
  #probe: NodeJS.Timeout | undefined;
  #probeDelay = PROBE_FIRST_MS;
  #probing = false;
  /** Closed: no probe is made or scheduled again, and no statement sent (pg-pool's `ended`). */
  #closed = false;
  /** What the host's user may set (profile.ts): any setting, until the host refuses one. */
  profile: HostProfile = ANY_SETTING;
  #learning: Promise<void> | undefined;

  readonly #answering: () => number;
  readonly #onChange: HostsOptions['onChange'];
  readonly #record: HostsOptions['record'];

  constructor(url: string, client: ClickHouseClient, answering: () => number, options: Pick<HostsOptions, 'onChange' | 'record'>) {
    this.#answering = answering;
    this.#onChange = options.onChange;
    this.#record = options.record;
    this.shown = redactUrl(url);
    this.location = `ClickHouse at ${this.shown}`;
    this.client = client;
    const run = clientRun(client, this.location);
    this.run = (kind, statement) => (this.#closed ? Promise.reject(new WarehouseError(`${this.location}: the warehouse is closed.`)) : run(kind, statement));
  }

  /** Asks the host what its user may set of `names`, one question at a time (a caller compares the profile before and after). */
  learn(names: Iterable<string>, signal?: AbortSignal): Promise<void> {
    const asking = (this.#learning ?? Promise.resolve()).catch(() => undefined).then(async () => {
      this.profile = await learnProfile(this.client, names, this.profile, signal);
    });
    this.#learning = asking;
    return asking;
  }

  /** Probes a host another process found down (tried last meanwhile): answered, it is an ordinary host again. */
  suspected(): void {
    this.suspect = true;
    void this.probe({ quiet: true });
  }

  /**
   * Marks the host down, and probes it until it answers: true when it was up. Who marked it says so
   * (`told`), once: a read says it once it knows whether another host answered.
   */
  down(reason: string): boolean {
    this.lastError = reason;
    const was = this.up;
    if (was) {
      this.up = false;
      this.since = new Date();
      this.#probeDelay = PROBE_FIRST_MS;
      this.#record?.(this.shown, { since: this.since.getTime(), reason });
    }
    this.#schedule();
    return was;
  }

  /** Says that the host went down. */
  told(): void {
    this.#onChange?.({ host: this.shown, up: false, reason: this.lastError ?? 'no answer', answering: this.#answering() });
  }

  /**
   * Asks the host now whether it answers (a statement got no answer in its time; `savedq status`):
   * its state once it has said, or not within PROBE_MS. Quiet: its change is not told (status's
   * report says it).
   */
  async probe({ quiet = false } = {}): Promise<void> {
    if (this.#probing) return;
    clearTimeout(this.#probe);
    this.#probe = undefined;
    await this.#ping(quiet);
  }

  #schedule(): void {
    if (this.#closed || this.#probe !== undefined || this.#probing) return;
    this.#probe = setTimeout(() => {
      this.#probe = undefined;
      void this.#ping(false);
    }, this.#probeDelay);
    // A process with nothing else to do exits: probes keep no one alive.
    this.#probe.unref();
    this.#probeDelay = Math.min(this.#probeDelay * 2, PROBE_MAX_MS);
  }

  async #ping(quiet: boolean): Promise<void> {
    if (this.#closed) return;
    this.#probing = true;
    let answered: boolean;
    let reason = 'did not answer its probe within 2 s';
    const deadline = AbortSignal.timeout(PROBE_MS);
    try {
      const result = await this.client.ping({ select: false, abort_signal: deadline });
      answered = result.success;
      // (The client's error for its aborted request would say "the user aborted".)
      if (!result.success && !deadline.aborted) reason = errorText(result.error);
    } catch (err) {
      answered = false;
      if (!deadline.aborted) reason = errorText(err);
    } finally {
      this.#probing = false;
    }
    if (this.#closed) return;
    if (answered) {
      if (!this.up || this.suspect) this.#record?.(this.shown, undefined);
      this.suspect = false;
      if (!this.up) {
        this.up = true;
        this.since = new Date();
        this.lastError = undefined;
        if (!quiet) this.#onChange?.({ host: this.shown, up: true, answering: this.#answering() });
      }
      return;
    }
    if (this.down(reason) && !quiet) this.told();
  }

  /** Closes the host once: no probe after this, no statement; a second close is the first's. */
  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      clearTimeout(this.#probe);
      this.#probe = undefined;
      this.#closing = this.client.close();
    }
    return this.#closing ?? Promise.resolve();
  }

  #closing: Promise<void> | undefined;
}

/** A write (a load, init) refused because the host's user is read-only. */
function readOnlyWrite(host: Host, cause?: unknown): WarehouseError {
  return new WarehouseError(`${host.location}: its user is read-only (readonly=${host.profile.readonly}): savedq reads with it, but cannot write with it (load, init); give those a user that may insert (docs/scaling.md).`, {
    cause,
    forCaller: "the warehouse's user is read-only.",
  });
}

/** A profile's limits as one text, to tell whether learning changed them. */
function profileKey(profile: HostProfile): string {
  return JSON.stringify([profile.readonly, [...profile.bounds].sort(([a], [b]) => a.localeCompare(b))]);
}

/** The names of the settings a statement sends: those its host's profile is asked about when it refuses one. */
function settingNames(statement: Statement): string[] {
  return [...Object.keys(statement.settings ?? {}), ...Object.keys(statement.requestSettings ?? {})];
}

/**
 * Why a host failed, as /health and the log say it (no password: none is in an error): its errno's
 * words (errno.ts), else the first line of its message.
 */
function errorText(err: unknown): string {
  const raw = (err instanceof WarehouseError ? err.cause : err) as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const code = [raw?.code, raw?.cause?.code].find((c) => typeof c === 'string');
  if (code !== undefined) return errnoText({ code });
  const message = err instanceof Error ? err.message : String(err);
  return (message.split('\n')[0] ?? '').replace(/\.$/, '').slice(0, 200) || 'no answer';
}

/**
 * Opens the hosts of a warehouse: reads go to the first host that answers (in order, or the one this
 * process picked), and move to the next on a network failure within the call's time; statements that
 * write go to one host and are never sent again (an insert replayed could be stored twice).
 */
export async function openHosts(options: HostsOptions): Promise<Statements> {
  const { createClient, ClickHouseLogLevel } = await loadClient();
  const hosts: Host[] = options.urls.map((url) => {
    let client: ClickHouseClient;
    try {
      client = createClient({
        url,
        // No setting of the client's own: each request's are sent as the host's user's profile allows (profile.ts).
        http_agent: agentFor(url),
        // The server enforces max_execution_time, and a read is given up just past it; this bounds a
        // statement that writes on a server that stops answering at all.
        request_timeout: (options.timeoutSeconds + 5) * 1000,
        // Errors reach the caller as savedq errors; the client's own logging would print them twice.
        log: { level: ClickHouseLogLevel.OFF },
      });
    } catch (err) {
      throw new WarehouseError(`invalid ClickHouse URL ${redactUrl(url)}.`, { cause: err });
    }
    return new Host(url, client, () => hosts.filter((h) => h.up).length, options);
  });
  // What another process found down lately is tried last, and asked at once whether it answers now.
  for (const host of hosts) if (options.suspects?.has(host.shown)) host.suspected();
  // Random: one host picked for this process's life (while it answers), the rest in order after it.
  const first = options.loadBalance === 'random' ? Math.floor(Math.random() * hosts.length) : 0;
  const ordered = [...hosts.slice(first), ...hosts.slice(0, first)];
  let cancelled = 0;
  /** KILL QUERY statements under way: closing waits for them (each bounded), so a command that gives up on a query stops it before it exits. */
  const kills = new Set<Promise<void>>();
  const location = hosts.length === 1 ? (hosts[0] as Host).location : `ClickHouse at ${hosts.map((h) => h.shown).join(', ')}`;

  /** The host a statement goes to next: the first that answers, not yet tried by it; one another process found down lately, after the others. */
  const next = (tried: ReadonlySet<Host>) => ordered.find((h) => h.up && !h.suspect && !tried.has(h)) ?? ordered.find((h) => h.up && !tried.has(h));

  /** No host answered: the error names each one and why. */
  const unreachable = (errors: Map<Host, unknown>): WarehouseUnreachableError => {
    if (hosts.length === 1) {
      const only = errors.get(hosts[0] as Host);
      if (only instanceof WarehouseUnreachableError) return only;
    }
    const why = hosts.map((h) => `${h.shown}: ${errors.has(h) ? errorText(errors.get(h)) : `down since ${h.since.toISOString()} (${h.lastError ?? 'no answer'})`}`);
    return new WarehouseUnreachableError(`no host of the warehouse answers (${why.join('; ')}).`, { forCaller: 'the warehouse cannot be reached (no host answers).' });
  };

  /** Stops a query given up on: its connection closed (the abort), then KILL QUERY of its id, bounded. */
  const kill = async (host: Host, queryId: string) => {
    cancelled += 1;
    try {
      await host.client.command({ query: 'KILL QUERY WHERE query_id = {query_id:String} ASYNC', query_params: { query_id: queryId }, abort_signal: AbortSignal.timeout(KILL_MS) });
    } catch {
      // Left to its max_execution_time: the host did not take the KILL in time, or is gone.
    }
  };

  /**
   * One attempt of a read on one host: a query id of its own, given up on at the call's deadline (which
   * the statement's signal says), and moved to the next host when its own host turns out hung: one whose
   * answer has not begun after HUNG_AFTER_MS is asked /ping on another connection, and a host that does
   * not answer its ping within PROBE_MS is hung (a slow query on a live host is left alone). The
   * engine's own time limit is what is left of the deadline when the attempt starts.
   */
  const attempt = async <K extends StatementKind>(host: Host, kind: K, statement: Statement & { readonly deadline: number }): Promise<Answers[K]> => {
    // No one waits any more, or no time is left: not begun.
    statement.signal?.throwIfAborted();
    const left = statement.deadline - Date.now();
    if (left <= 0) throw new QueryTimeoutError(`request to ${host.location} timed out.`, { ranPastLimit: true });
    const queryId = nodeCrypto().randomUUID();
    const controller = new AbortController();
    const abandon = () => controller.abort(statement.signal?.reason);
    statement.signal?.addEventListener('abort', abandon, { once: true });
    // A statement made for no call has no signal at its deadline: its own timer, past the server's timeout.
    const timer = statement.signal === undefined ? setTimeout(() => controller.abort(new QueryTimeoutError(`request to ${host.location} timed out.`, { forCaller: 'the warehouse did not answer in time.' })), left + GRACE_MS) : undefined;
    let begun = false;
    const hung = setTimeout(() => {
      void host.probe().then(() => {
        if (!host.up && !begun) controller.abort(new WarehouseUnreachableError(`${host.location} is hung: no answer begun after ${HUNG_AFTER_MS / 1000} s, and none to a ping within ${PROBE_MS / 1000} s.`, { cause: Object.assign(new Error('hung'), { code: 'ETIMEDOUT' }) }));
      });
    }, HUNG_AFTER_MS);
    const settle = () => {
      clearTimeout(timer);
      clearTimeout(hung);
      statement.signal?.removeEventListener('abort', abandon);
    };
    const stop = () => {
      const killing = kill(host, queryId).finally(() => kills.delete(killing));
      kills.add(killing);
    };
    /** A failure of the attempt, said as why it was given up on (the deadline, the caller gone, the host hung), its query stopped then. */
    const failed = (err: unknown): unknown => {
      if (!controller.signal.aborted) return err;
      const why: unknown = controller.signal.reason;
      // A hung host takes no KILL either: its query ends with its connection, or its max_execution_time.
      if (!(why instanceof WarehouseUnreachableError)) stop();
      return why instanceof Error ? why : err;
    };
    // A streamed answer holds its timer and its query id until it ends: left early, its query is stopped.
    let streaming = false;
    try {
      const sent = asAllowed(host, { ...statement, settings: withinDeadline(statement.settings, left), requestSettings: READ_REQUEST });
      const answer = await host.run(kind, { ...sent, queryId, signal: controller.signal });
      begun = true;
      clearTimeout(hung);
      if (kind !== 'stream') return answer;
      streaming = true;
      const ended = whenEnded(answer as Answers['stream'], ({ early }) => {
        settle();
        if (early && !controller.signal.aborted) stop();
      });
      return failingAs(ended, failed) as Answers[K];
    } catch (err) {
      throw failed(err);
    } finally {
      if (!streaming) settle();
    }
  };

  /** A statement as its host's user's profile lets it be sent; what that changed of the call's limits told to the call. */
  const asAllowed = (host: Host, statement: Statement): Statement => {
    const { statement: sent, changes } = asProfileAllows(statement, host.profile, host.location);
    for (const change of changes) {
      const said = changeText(change, host.profile);
      if (said !== undefined) statement.onBound?.(said);
    }
    return sent;
  };

  /**
   * Sends a statement to a host, as its user's profile allows: a statement the host refuses for a
   * setting (nothing ran) makes savedq ask the host what its user may set, and goes again as that allows.
   */
  const asProfiled = async <T>(host: Host, statement: Statement, send: () => Promise<T>): Promise<T> => {
    for (let round = 0; ; round += 1) {
      // The profile it is sent under: another statement may learn the host's meanwhile.
      const sentUnder = profileKey(host.profile);
      try {
        return await send();
      } catch (err) {
        if (round >= 2 || !isProfileRefusal(err) || statement.signal?.aborted === true) throw err;
        await host.learn(settingNames({ ...statement, requestSettings: READ_REQUEST }), statement.signal).catch(() => undefined);
        if (profileKey(host.profile) === sentUnder) throw err;
      }
    }
  };

  const read = async <K extends StatementKind>(kind: K, statement: Statement): Promise<Answers[K]> => {
    // One deadline for every attempt: the call's, else (savedq's own statements) the process's time limit from now.
    const deadline = statement.deadline ?? Date.now() + options.timeoutSeconds * 1000;
    const tried = new Set<Host>();
    const errors = new Map<Host, unknown>();
    /** The hosts this read marked down, said once the read knows whether another answered. */
    const wentDown: Host[] = [];
    try {
      for (let host = next(tried); host !== undefined; ) {
        tried.add(host);
        try {
          const chosen = host;
          const answer = await asProfiled(chosen, statement, () => attempt(chosen, kind, { ...statement, deadline }));
          // Moved away from each host that failed it, to this one, which answered: a failover of each.
          for (const failed of errors.keys()) failed.failovers += 1;
          return answer;
        } catch (err) {
          if (!isNetworkFailure(err) || statement.signal?.aborted === true) throw err;
          errors.set(host, err);
          if (host.down(errorText(err))) wentDown.push(host);
          const then = next(tried);
          if (then === undefined || Date.now() >= deadline) break;
          host = then;
        }
      }
      throw unreachable(errors);
    } finally {
      for (const host of wentDown) host.told();
    }
  };

  /** The host statements that write go to: the first that answers. */
  const writer = (): Host => {
    const host = next(new Set());
    if (host === undefined) throw unreachable(new Map());
    return host;
  };

  const status = (): WarehouseHosts => ({
    hosts: hosts.map((h): HostStatus => {
      const user = hostUser(h.profile);
      return { host: h.shown, state: h.up ? 'up' : 'down', since: h.since.toISOString(), ...(h.lastError !== undefined ? { last_error: h.lastError } : {}), failovers: h.failovers, ...(user ? { user } : {}) };
    }),
    cancelled,
    unreachable: hosts.every((h) => !h.up),
  });

  return {
    location,
    embedded: false,
    run: (kind, statement) => {
      if (kind === 'command') {
        const host = writer();
        const send = () => host.run(kind, asAllowed(host, { ...statement, requestSettings: BASE_SETTINGS }));
        return asProfiled(host, statement, send).catch((err: unknown) => {
          if (isNetworkFailure(err) && host.down(errorText(err))) host.told();
          throw isProfileRefusal(err) && host.profile.readonly > 0 ? readOnlyWrite(host, err) : err;
        });
      }
      return read(kind, statement);
    },
    stage: (lines) => {
      const host = writer();
      if (host.profile.readonly > 0) throw readOnlyWrite(host);
      return Promise.resolve(stageOnServer(host.client, host.location, lines));
    },
    hosts: status,
    // Each host asked now whether it answers, and what its user may set of what savedq sends.
    probeHosts: async () => {
      await Promise.all(
        hosts.map(async (h) => {
          await h.probe({ quiet: true });
          if (h.up) await h.learn(SENT_SETTINGS, AbortSignal.timeout(PROBE_MS)).catch(() => undefined);
        }),
      );
      return status();
    },
    close: async () => {
      await Promise.all([...kills]);
      await Promise.all(hosts.map((h) => h.close()));
    },
  };
}

import { hostname } from 'node:os';
import { basename } from 'node:path';
import { asOfMicros, type CallRequest, type PreparedCall } from '../calls/prepare.js';
import type { RunResult } from '../calls/runner.js';
import { jsonText } from '../json.js';
import { nodeCrypto } from '../lazy.js';
import type { DefinitionProblem } from '../queries/definition.js';
import { paramsText } from '../queries/params.js';
import type { Row } from '../queries/types.js';
import { plural } from '../words.js';
import { InputError, NotFoundError, SandboxRefusedError, BadSqlError } from '../errors.js';
import type { AsOf } from '../time.js';
import { deliver, DELIVERY_WINDOW_MS, retryDelayMs } from './deliver.js';
import { readAlertFiles, targetText, type AlertCall, type AlertSpec, type Target } from './spec.js';
import type { AlertRecords, AlertState, Change, StateRecord } from '../store/types.js';

export { durationText } from './spec.js';
export type { AlertState } from '../store/types.js';

/** An alert's state as people read it: `new` before its first evaluation (tools read null there, as a notification's old_state). */
export function stateWord(state: AlertState | null): string {
  return state ?? 'new';
}

/** The alert a file is of, by its name (`fn-errors.alert.yaml`: fn-errors). */
function alertNameOf(file: string): string {
  return basename(file).replace(/\.alert\.yaml$/, '');
}

/** The alerts kept in the store with no file of theirs in the folders, a broken one's included. */
function goneOf(kept: ReadonlyMap<string, StateRecord>, alerts: readonly AlertSpec[], broken: readonly BrokenAlert[]): GoneAlert[] {
  const present = new Set([...alerts.map((a) => a.name), ...broken.map((b) => alertNameOf(b.file))]);
  return [...kept.values()].filter((r) => !present.has(r.name)).map((r) => ({ name: r.name, state: r.state }));
}

/** What is wrong with an alert's own query, parameters or condition, at its line: the alert is broken. */
class AlertProblem extends Error {
  constructor(readonly problem: DefinitionProblem) {
    super(problem.message);
  }
}

/** The engine's refusal of an alert's condition over its query's answer (a field the answer has not), at the condition's line. */
function refusedCondition(alert: AlertCall, query: string, said: string): AlertProblem {
  return new AlertProblem({ file: alert.file, line: alert.lines.condition, message: `the engine refuses the condition over ${query}'s answer: ${said}` });
}

/** An alert's lease lasts this long, renewed while its process works on it: a dead holder's is free within a minute. */
const ALERT_LEASE_MS = 60_000;

/** Rows of the answer a notification carries, at most (docs/alerts.md). */
const ROWS_SENT = 20;

/** What alerts need of the library: its calls, the store and the queries folders. */
export interface AlertParts {
  readonly folders: readonly string[];
  /** Where their state, history and outbox are kept: the store's (store/). */
  readonly records: AlertRecords;
  /** The alerts' clock (epoch ms) when no --at is given. */
  readonly clock: () => number;
  prepare(request: CallRequest): Promise<PreparedCall>;
  withCondition(call: PreparedCall, condition: { when?: string | undefined; whenSql?: string | undefined }): Promise<PreparedCall>;
  run(call: PreparedCall): Promise<RunResult>;
  /** What the engine says of the call's SQL over the answer, planned and not run, or undefined. */
  explain(call: PreparedCall): Promise<string | undefined>;
  /** The environment a command runs with. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly userAgent: string;
}

/** The JSON a notification sends (docs/alerts.md). */
export interface Notification {
  /** Unique to this notification: sent as Idempotency-Key too, so a receiver can tell a retry. */
  readonly id: string;
  readonly alert: string;
  readonly description?: string;
  readonly query: string;
  readonly params: Readonly<Record<string, string>>;
  /** null on the alert's first evaluation. */
  readonly old_state: AlertState | null;
  readonly new_state: AlertState;
  /** When it was evaluated (ISO 8601). */
  readonly at: string;
  /** When the alert came into new_state. */
  readonly since: string;
  /** The condition, as its file says it. */
  readonly when?: string;
  readonly when_sql?: string;
  /** Rows of the answer that matched (the query's row limit at most). */
  readonly matched: number;
  readonly rows: readonly Row[];
  readonly error?: string;
  /** One line for people (Slack and its like show it). */
  readonly text: string;
}

/** One alert evaluated: what it was, what it is, and what it sent (or would send). */
export interface Evaluation {
  readonly alert: string;
  readonly query: string;
  readonly oldState: AlertState | null;
  readonly newState: AlertState;
  readonly matched: number;
  readonly error?: string | undefined;
  /** What it found, in words: `3 rows matched`, or the error. */
  readonly detail: string;
  /** The notification this evaluation owes, if any (alerts test: what it would send). */
  readonly notification?: Notification | undefined;
  readonly targets: readonly string[];
}

/** One attempt to deliver a notification. */
export interface DeliveryOutcome {
  readonly alert: string;
  /** Where it went, as it may be shown (a webhook's host). */
  readonly target: string;
  readonly newState: string;
  readonly delivered: boolean;
  readonly error?: string;
  /** The notification was tried for 24 h and is abandoned. */
  readonly gaveUp?: boolean;
}

/** An alert file that cannot be used. */
export interface BrokenAlert {
  readonly file: string;
  readonly problems: readonly DefinitionProblem[];
  /** What read well of its call, which check checks too. */
  readonly call?: AlertCall | undefined;
}

/** What `alerts check` did. */
export interface CheckReport {
  readonly evaluations: readonly Evaluation[];
  readonly deliveries: readonly DeliveryOutcome[];
  /** Alerts another process was evaluating. */
  readonly busy: readonly string[];
  readonly broken: readonly BrokenAlert[];
  /** Every alert's state after the check (null: never evaluated). */
  readonly states: ReadonlyMap<string, AlertState | null>;
  /** Alerts whose state is kept but whose file is in none of the folders (moved, removed, or the wrong folders given). */
  readonly gone: readonly GoneAlert[];
  /** The folders the alert files were looked for in. */
  readonly folders: readonly string[];
}

/** An alert savedq keeps a state of, with no file in the queries folders. */
export interface GoneAlert {
  readonly name: string;
  /** Its last state (null: never evaluated). */
  readonly state: AlertState | null;
}

/** An alert as `savedq alerts` lists it. */
export interface AlertView {
  readonly name: string;
  readonly file: string;
  readonly query: string;
  readonly state: AlertState | null;
  readonly since: number | null;
  readonly evaluatedAt: number | null;
  readonly every: number;
  readonly detail: string | null;
  readonly targets: readonly string[];
  /** Notifications not yet delivered, and why the last attempt failed. */
  readonly waiting: number;
  readonly lastError: string | null;
}

/** How a check is asked for. */
export interface CheckOptions {
  /** The instant to evaluate as of (and the alerts' clock); absent: now. */
  readonly at?: AsOf;
  /** Only these alerts (default: every one that is due). */
  readonly names?: readonly string[];
  /** Whether alerts not yet due are evaluated too. */
  readonly force?: boolean;
  readonly signal?: AbortSignal | undefined;
}

/** A cron minute is not exact: an alert evaluated a little less than `every` ago is due (a tenth of it, 30 s at most). */
function slackMs(everyMs: number): number {
  return Math.min(30_000, everyMs / 10);
}

/** Whether a process (`host:pid:…`, a lease's owner) is gone: on this machine, and no longer running. */
function isGone(owner: string): boolean {
  const [host, pid] = owner.split(':');
  if (host !== hostname() || !pid) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The alerts' clock: the instant given with --at (checked as a run checks it), else the library's. */
function nowOf(at: AsOf, clock: () => number): number {
  const micros = asOfMicros(at);
  return micros === undefined ? clock() : Number(micros / 1000n);
}

/** What a failure says, on one line. */
function reasonOf(err: unknown): string {
  const text = err instanceof Error ? ((err as { forCaller?: string }).forCaller ?? err.message) : String(err);
  return text.split('\n')[0] ?? '';
}

/** What an evaluation found: the rows that matched, or why it could not tell. */
type Outcome = { readonly rows: Row[]; readonly truncated: boolean; readonly params: Readonly<Record<string, string>> } | { readonly error: string; readonly params?: Readonly<Record<string, string>> };

/** What a change of state is called in a notification's text. */
type Kind = 'firing' | 'still firing' | 'error' | 'resolved' | 'pending' | 'ok';

/**
 * Alerts (docs/alerts.md): `<name>.alert.yaml` files of the queries folders, each a saved query's call, a
 * condition over its answer, and whom to tell. Each evaluation runs the call through the library (the
 * cache included) with the condition as SQL over the answer, so every row is looked at; a failing
 * query is `error`, never `ok`. What an evaluation decides (state, history, notifications) is kept in
 * one transaction before anything is sent; notifications are delivered in order per alert and target,
 * retried with backoff for 24 h.
 */
export class Alerts {
  readonly #parts: AlertParts;

  /** This process, as a lease names it. */
  readonly #owner = `${hostname()}:${process.pid}:${nodeCrypto().randomUUID().slice(0, 8)}`;

  constructor(parts: AlertParts) {
    this.#parts = parts;
  }

  #open(): Promise<AlertRecords> {
    return Promise.resolve(this.#parts.records);
  }

  /** Every alert file of the folders: the alerts, and the files that are broken. */
  read(): { alerts: AlertSpec[]; broken: BrokenAlert[] } {
    const alerts: AlertSpec[] = [];
    const broken: BrokenAlert[] = [];
    for (const read of readAlertFiles(this.#parts.folders)) {
      if (read.alert) alerts.push(read.alert);
      else broken.push({ file: read.problems[0]?.file ?? '', problems: read.problems, call: read.call });
    }
    return { alerts, broken };
  }

  /** One alert by name, or a NotFoundError naming the ones there are. */
  find(name: string): AlertSpec {
    const { alerts, broken } = this.read();
    const found = alerts.find((a) => a.name === name);
    if (found) return found;
    const isBroken = broken.find((b) => alertNameOf(b.file) === name);
    if (isBroken) throw new InputError(`the alert ${name} is broken: ${isBroken.problems[0]?.message ?? ''} (see savedq check).`);
    throw new NotFoundError(`no alert named ${name}${alerts.length > 0 ? `; there are ${alerts.map((a) => a.name).join(', ')}` : ': there are no <name>.alert.yaml files in the queries folders'}.`);
  }

  /**
   * Evaluates every alert that is due (its `every` since its last evaluation), keeps what each decided,
   * and delivers what is owed, each alert under a lease so that no two processes on one cache file
   * evaluate it at once.
   */
  async check(options: CheckOptions = {}): Promise<CheckReport> {
    const now = nowOf(options.at, this.#parts.clock);
    const { alerts, broken } = this.read();
    for (const name of options.names ?? []) if (!alerts.some((a) => a.name === name)) this.find(name);
    const chosen = options.names ? alerts.filter((a) => options.names?.includes(a.name)) : alerts;
    const store = await this.#open();
    const evaluations: Evaluation[] = [];
    const deliveries: DeliveryOutcome[] = [];
    const busy: string[] = [];
    // Taken again before each delivery, and renewed while the work goes on, so that a process that dies
    // (on another machine: not to be asked whether it runs) leaves its alerts to another within a minute.
    const lease = async (name: string) => store.lease(name, this.#owner, Date.now() + ALERT_LEASE_MS, Date.now(), isGone);
    const underLease = async (name: string, work: (state: StateRecord) => Promise<void>) => {
      const state = await lease(name);
      if (!state) return busy.push(name);
      const renew = setInterval(() => void lease(name).catch(() => undefined), ALERT_LEASE_MS / 4);
      renew.unref();
      try {
        await work(state);
      } finally {
        clearInterval(renew);
        await store.release(name, this.#owner);
      }
      return undefined;
    };
    const isDue = (alert: AlertSpec, state: StateRecord | undefined) =>
      options.force === true || state?.evaluatedAt == null || now >= state.evaluatedAt + alert.everyMs - slackMs(alert.everyMs);
    // An alert neither due nor owing anything costs no lease (a write): most of a cron minute's alerts.
    const [before, owing] = await Promise.all([store.states(), store.owing()]);
    for (const alert of chosen) {
      options.signal?.throwIfAborted();
      // The one rule: an alert check calls broken is broken whenever a check runs, due or not (its
      // state, firing a moment ago, is not reported as if it held). A warehouse that cannot tell now
      // leaves it to its evaluation, when due.
      const problem = await this.#problemOf(alert, options.at).catch(() => undefined);
      if (problem !== undefined) {
        broken.push({ file: alert.file, problems: [problem] });
        continue;
      }
      if (!isDue(alert, before.get(alert.name)) && !owing.includes(alert.name)) continue;
      await underLease(alert.name, async (state) => {
        if (isDue(alert, state)) {
          let evaluated;
          try {
            evaluated = await this.#evaluate(alert, state, now, options.at);
          } catch (err) {
            // Broken, as check says it is: reported so, its state left as it was, nothing sent.
            if (!(err instanceof AlertProblem)) throw err;
            broken.push({ file: alert.file, problems: [err.problem] });
            return;
          }
          const { next, change, evaluation } = evaluated;
          const payload = evaluation.notification ? jsonText(evaluation.notification) : undefined;
          await store.decide(next, change, payload ? alert.notify.map((target) => ({ target: JSON.stringify(target), payload })) : [], now);
          evaluations.push(evaluation);
        }
        deliveries.push(...(await this.#deliverOwed(store, alert.name, now, lease)));
      });
    }
    // An alert whose file is gone still delivers what it owes.
    if (!options.names) {
      for (const name of owing) {
        if (alerts.some((a) => a.name === name)) continue;
        await underLease(name, async () => {
          deliveries.push(...(await this.#deliverOwed(store, name, now, lease)));
        });
      }
    }
    await store.prune(now);
    const after = await store.states();
    const states = new Map(alerts.map((a) => [a.name, after.get(a.name)?.state ?? null]));
    const gone = options.names ? [] : goneOf(after, alerts, broken);
    // A broken alert has no state to tell of in a check: it is reported as broken.
    for (const b of broken) states.delete(alertNameOf(b.file));
    return { evaluations, deliveries, busy, broken, states, gone, folders: this.#parts.folders };
  }

  /**
   * Drops what is kept of an alert whose file is gone (its state, history and notifications not
   * delivered), so that checks stop reporting it; one with a file is refused, as its next check would
   * start it again as new.
   */
  async forget(name: string): Promise<GoneAlert> {
    const { alerts, broken } = this.read();
    if (alerts.some((a) => a.name === name) || broken.some((b) => alertNameOf(b.file) === name)) {
      throw new InputError(`the alert ${name} has a file in the queries folders; remove the file first, then forget it.`);
    }
    const store = await this.#open();
    const kept = (await store.states()).get(name);
    if (!kept) throw new NotFoundError(`savedq keeps nothing of an alert named ${name}.`);
    await store.forget(name);
    return { name, state: kept.state };
  }

  /** Evaluates one alert now (or as of `at`) and says what it would send, changing nothing and sending nothing (`alerts test`). */
  async test(name: string, at?: AsOf): Promise<Evaluation & { wouldSend: boolean }> {
    const alert = this.find(name);
    const now = nowOf(at, this.#parts.clock);
    const state = (await (await this.#open()).states()).get(name) ?? { name, state: null, since: null, holdingSince: null, evaluatedAt: null, notifiedAt: null, detail: null };
    const { kind, evaluation, outcome, next } = await this.#evaluate(alert, state, now, at).catch((err: unknown) => {
      throw err instanceof AlertProblem ? new InputError(`the alert ${name} is broken: ${err.message} (see savedq check).`) : err;
    });
    // What it would send; when it owes nothing, what it would say of this state: the text and rows a receiver gets.
    const shown = evaluation.notification ?? this.#notification(alert, state, evaluation.newState, outcome, now, next.since ?? now, evaluation.newState);
    return { ...evaluation, notification: shown, wouldSend: kind !== undefined };
  }

  /** Every alert with its state and what it owes (`savedq alerts`). */
  async list(): Promise<{ alerts: AlertView[]; broken: BrokenAlert[]; gone: GoneAlert[]; folders: readonly string[] }> {
    const read = this.read();
    const broken = [...read.broken];
    const alerts: AlertSpec[] = [];
    // Listed as check calls it: broken, not in the state it was in before.
    for (const alert of read.alerts) {
      const problem = await this.#problemOf(alert).catch(() => undefined);
      if (problem === undefined) alerts.push(alert);
      else broken.push({ file: alert.file, problems: [problem] });
    }
    const store = await this.#open();
    const [states, owed] = await Promise.all([store.states(), store.outboxSummary()]);
    const views = alerts.map((a): AlertView => {
      const s = states.get(a.name);
      const o = owed.get(a.name);
      return {
        name: a.name,
        file: a.file,
        query: a.query,
        state: s?.state ?? null,
        since: s?.since ?? null,
        evaluatedAt: s?.evaluatedAt ?? null,
        every: a.everyMs,
        detail: s?.detail ?? null,
        targets: a.notify.map(targetText),
        waiting: o?.waiting ?? 0,
        lastError: o?.lastError ?? null,
      };
    });
    return { alerts: views, broken, gone: goneOf(states, alerts, broken), folders: this.#parts.folders };
  }

  /** An alert's latest changes of state, newest first. */
  async history(name: string, limit = 20): Promise<Change[]> {
    return (await this.#open()).history(name, limit);
  }

  /**
   * What `savedq check` says of every alert file: its own problems, then, for one that reads well, its
   * query and parameters checked as a run checks them, its condition on the engine's parse, and the
   * engine's plan of the condition over the answer (a field the answer has not), each at its line.
   */
  async checkFiles(): Promise<{ file: string; name: string | null; query: string | null; problems: DefinitionProblem[] }[]> {
    const { alerts, broken } = this.read();
    const checked: { file: string; name: string | null; query: string | null; problems: DefinitionProblem[] }[] = [];
    for (const alert of alerts) {
      const { query, problem } = await this.#checked(alert);
      checked.push({ file: alert.file, name: alert.name, query, problems: problem === undefined ? [] : [problem] });
    }
    for (const b of broken) {
      // Its call too, as far as it reads: every problem of the file at once, not one round a fix.
      const more = b.call ? await this.#callOf(b.call).then(() => [], (err: unknown) => {
        if (err instanceof AlertProblem) return [err.problem];
        throw err;
      }) : [];
      checked.push({ file: b.file, name: null, query: null, problems: [...b.problems, ...more].sort((x, y) => x.line - y.line) });
    }
    return checked;
  }

  /**
   * What makes an alert broken, or undefined: its call (#callOf), then the engine's plan of its
   * condition over the answer (a field the answer has not). Anything else (the warehouse) is thrown.
   */
  async #problemOf(alert: AlertSpec, at?: AsOf): Promise<DefinitionProblem | undefined> {
    return (await this.#checked(alert, at)).problem;
  }

  /** An alert as check reads it: the query its call runs (when it reads so far), and its problem. */
  async #checked(alert: AlertSpec, at?: AsOf): Promise<{ query: string | null; problem: DefinitionProblem | undefined }> {
    let query: string | null = null;
    try {
      const { call, over } = await this.#callOf(alert, at);
      query = call.query.name;
      const said = await this.#parts.explain(over);
      return { query, problem: said === undefined ? undefined : refusedCondition(alert, call.query.name, said).problem };
    } catch (err) {
      if (err instanceof AlertProblem) return { query, problem: err.problem };
      throw err;
    }
  }

  /**
   * An alert's call: its query with its parameters, as a run checks them, and its condition over the
   * answer, checked on the engine's parse. What is wrong with either is the alert's own mistake, an
   * AlertProblem at its line: the one rule by which `check` calls an alert broken and `alerts check`
   * and `alerts test` never evaluate it.
   */
  async #callOf(alert: AlertCall, at?: AsOf): Promise<{ call: PreparedCall; over: PreparedCall }> {
    let call: PreparedCall;
    try {
      call = await this.#parts.prepare({ nameOrId: alert.query, params: alert.params, at });
    } catch (err) {
      if (!(err instanceof InputError || err instanceof NotFoundError)) throw err;
      throw new AlertProblem({ file: alert.file, line: err instanceof NotFoundError ? alert.lines.query : alert.lines.params, message: err.message });
    }
    try {
      return { call, over: await this.#parts.withCondition(call, alert) };
    } catch (err) {
      if (!(err instanceof SandboxRefusedError || err instanceof BadSqlError)) throw err;
      throw new AlertProblem({ file: alert.file, line: alert.lines.condition, message: `${alert.when !== undefined ? 'when' : 'when_sql'}: ${err.message}` });
    }
  }

  /** Runs an alert's call with its condition over the answer, and decides its next state. */
  async #evaluate(alert: AlertSpec, old: StateRecord, now: number, at: AsOf): Promise<{ next: StateRecord; change: Change | undefined; kind: Kind | undefined; evaluation: Evaluation; outcome: Outcome }> {
    const outcome = await this.#outcome(alert, at);
    const matched = 'rows' in outcome ? outcome.rows.length : 0;
    const holdingSince = 'error' in outcome || matched === 0 ? null : (old.state === 'pending' || old.state === 'firing' ? old.holdingSince : null) ?? now;
    const newState: AlertState =
      'error' in outcome ? 'error' : matched === 0 ? 'ok' : old.state === 'firing' || now - (holdingSince ?? now) >= alert.forMs ? 'firing' : 'pending';
    const since = newState === old.state && old.since !== null ? old.since : now;
    const kind = notificationKind(alert, old, newState, now);
    const detail = 'error' in outcome ? outcome.error : `${rowsText(outcome)} matched`;
    const notification = kind ? this.#notification(alert, old, newState, outcome, now, since, kind) : undefined;
    const next: StateRecord = { name: alert.name, state: newState, since, holdingSince, evaluatedAt: now, notifiedAt: kind ? now : old.notifiedAt, detail };
    const change = newState !== old.state ? { alert: alert.name, at: now, oldState: old.state, newState, detail } : undefined;
    const evaluation: Evaluation = {
      alert: alert.name,
      query: alert.query,
      oldState: old.state,
      newState,
      matched,
      ...('error' in outcome ? { error: outcome.error } : {}),
      detail,
      notification,
      targets: alert.notify.map(targetText),
    };
    return { next, change, kind, evaluation, outcome };
  }

  /**
   * What an alert's call answers: the rows its condition matched, or why the warehouse could not tell
   * (an `error` state). An alert that cannot be run (AlertProblem: a query, parameter or condition of
   * its own that is wrong, the engine's refusal of the condition over the answer included) is thrown.
   */
  async #outcome(alert: AlertSpec, at: AsOf): Promise<Outcome> {
    let params: Readonly<Record<string, string>> | undefined;
    try {
      const { call, over } = await this.#callOf(alert, at);
      params = call.params;
      try {
        const result = await this.#parts.run(over);
        return { rows: result.rows, truncated: result.truncated, params };
      } catch (err) {
        // SQL over an answer that fails may be the condition's mistake, or the query's own failure as it
        // ran (the engine says both the same way): the engine's plan of it, not run, tells, as check asks.
        const said = err instanceof BadSqlError ? await this.#parts.explain(over).catch(() => undefined) : undefined;
        if (said !== undefined) throw refusedCondition(alert, call.query.name, said);
        throw err;
      }
    } catch (err) {
      if (err instanceof AlertProblem) throw err;
      return { error: reasonOf(err), ...(params ? { params } : {}) };
    }
  }

  #notification(alert: AlertSpec, old: StateRecord, newState: AlertState, outcome: Outcome, now: number, since: number, kind: Kind): Notification {
    const params = outcome.params ?? Object.fromEntries(alert.params);
    const rows = 'rows' in outcome ? outcome.rows : [];
    const given = paramsText(params, ', ');
    const call = given === '' ? alert.query : `${alert.query} (${given})`;
    const condition = alert.when ?? alert.whenSql ?? '';
    const shown = condition.length > 120 ? `${condition.slice(0, 117)}...` : condition;
    const n = rowsText(outcome);
    const text = {
      firing: `savedq alert ${alert.name} is FIRING: ${n} of ${call} match ${shown}`,
      'still firing': `savedq alert ${alert.name} is STILL FIRING (since ${iso(old.since ?? now)}): ${n} of ${call} match ${shown}`,
      error: `savedq alert ${alert.name} is in ERROR: ${call} could not be evaluated: ${'error' in outcome ? outcome.error : ''}`,
      resolved: `savedq alert ${alert.name} is RESOLVED: no row of ${call} matches ${shown} (it was ${old.state ?? 'unknown'} since ${iso(old.since ?? now)})`,
      pending: `savedq alert ${alert.name} is PENDING: ${n} of ${call} match ${shown}, for less than its for: so far`,
      ok: `savedq alert ${alert.name} is OK: no row of ${call} matches ${shown}`,
    }[kind];
    return {
      id: nodeCrypto().randomUUID(),
      alert: alert.name,
      ...(alert.description !== undefined ? { description: alert.description } : {}),
      query: alert.query,
      params,
      old_state: old.state,
      new_state: newState,
      at: iso(now),
      since: iso(since),
      ...(alert.when !== undefined ? { when: alert.when } : { when_sql: alert.whenSql }),
      matched: rows.length,
      rows: rows.slice(0, ROWS_SENT),
      ...('error' in outcome ? { error: outcome.error } : {}),
      text,
    };
  }

  /** Delivers an alert's notifications that are due, oldest first; a target's later ones wait behind one that failed. */
  async #deliverOwed(store: AlertRecords, name: string, now: number, lease: (name: string) => Promise<StateRecord | undefined>): Promise<DeliveryOutcome[]> {
    const outcomes: DeliveryOutcome[] = [];
    const waitingBehind = new Set<string>();
    for (const d of await store.waiting(name)) {
      const key = d.target;
      if (waitingBehind.has(key)) continue;
      if (d.nextAt > now) {
        waitingBehind.add(key);
        continue;
      }
      if (!(await lease(name))) break;
      const aim = JSON.parse(d.target) as Target;
      const target = targetText(aim);
      const newState = (JSON.parse(d.payload) as Notification).new_state;
      try {
        await deliver(aim, d.payload, this.#parts.env, this.#parts.userAgent);
        await store.delivered(d.id, now);
        outcomes.push({ alert: name, target, newState, delivered: true });
      } catch (err) {
        const reason = reasonOf(err);
        const gaveUp = now - d.createdAt >= DELIVERY_WINDOW_MS;
        await store.failed(d.id, reason, gaveUp ? undefined : now + retryDelayMs(d.attempts + 1), now);
        if (!gaveUp) waitingBehind.add(key);
        outcomes.push({ alert: name, target, newState, delivered: false, error: reason, ...(gaveUp ? { gaveUp } : {}) });
      }
    }
    return outcomes;
  }

}

/** The rows that matched, in words: `1 row`, `3 rows`, `1000+ rows` when the query's row limit cut them. */
function rowsText(outcome: Outcome): string {
  const n = 'rows' in outcome ? outcome.rows.length : 0;
  return plural(`${n}${'rows' in outcome && outcome.truncated ? '+' : ''}`, 'row', n);
}

/** The notification a change owes (docs/alerts.md), if any. */
function notificationKind(alert: AlertSpec, old: StateRecord, newState: AlertState, now: number): Kind | undefined {
  if (newState === 'firing') {
    if (old.state !== 'firing') return 'firing';
    const last = old.notifiedAt ?? old.since ?? now;
    return alert.repeatMs !== undefined && now - last >= alert.repeatMs - slackMs(alert.repeatMs) ? 'still firing' : undefined;
  }
  if (newState === 'error') return old.state === 'error' ? undefined : 'error';
  if (newState === 'ok') return old.state === 'firing' || old.state === 'error' ? 'resolved' : undefined;
  return undefined;
}

// serve's page: a form for each saved query, built from the server's OpenAPI document (the one mapping
// of parameters to JSON Schema), its answer as a table and, for a time series, a chart. Everything it
// asks for is on this server (relative addresses); the credential stays in this tab's sessionStorage.
import uPlot from 'uplot';
import { columnTexts } from '../../output/cells.js';
import { bucketStep, chartShape, fieldsOfRows } from '../../output/shape.js';
import type { TableField } from '../../output/types.js';
import { SQL_PARAM } from '../../queries/sql.js';
import { QUERY_PREFIX } from '../paths.js';

/** A JSON Schema of a parameter or a field, as /openapi.json gives it. */
interface Schema {
  type?: string;
  format?: string;
  pattern?: string;
  enum?: unknown[];
  examples?: unknown[];
  minimum?: number;
  maximum?: number;
  default?: unknown;
  items?: Schema;
  description?: string;
}

interface Parameter {
  name: string;
  required: boolean;
  description?: string;
  schema: Schema;
  /** savedq's type of the parameter (queries/types.ts's ParamType), as the OpenAPI document says it. */
  'x-savedq-type': string;
  /** The value the credential's token fixes, as the server's document for it says. */
  'x-savedq-fixed'?: string;
}

/** A saved query as the page offers it. */
interface Query {
  name: string;
  id: string;
  summary: string;
  parameters: Parameter[];
  /** Its rows' fields, in order, with their schemas. */
  fields: [string, Schema][];
  /** A sandboxed query's `sql` parameter, when the credential may send SQL: what the SQL box says of it. */
  sql?: Parameter;
}

type Row = Record<string, unknown>;

const CREDENTIAL_KEY = 'savedq.credential';
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const form = byId<HTMLFormElement>('call');
const credential = byId<HTMLInputElement>('credential');
const tokenNote = byId<HTMLParagraphElement>('token-note');
const querySelect = byId<HTMLSelectElement>('query');
const queryHelp = byId<HTMLElement>('query-help');
const paramsBox = byId<HTMLFieldSetElement>('params');
const runButton = byId<HTMLButtonElement>('run');
const commands = byId<HTMLElement>('commands');
const asCurl = byId<HTMLElement>('as-curl');
const asRun = byId<HTMLElement>('as-run');
const status = byId<HTMLParagraphElement>('status');
const chartBox = byId<HTMLDivElement>('chart');
const table = byId<HTMLTableElement>('rows');

/** The saved queries the server answers: its public document. */
let publicQueries: Query[] = [];

/** What the server shows the credential: its queries (a token's own, its fixed parameters marked), and whether it is a token. */
interface View {
  readonly queries: Query[];
  readonly token: boolean;
}
let view: View = { queries: [], token: false };
/** The charts of the answer shown: one a unit (counts apart from measures). */
let charts: uPlot[] = [];

/** An element with attributes and children (text is always text: nothing is parsed as HTML). */
function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string | boolean> = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false) continue;
    node.setAttribute(name, value === true ? '' : value);
  }
  node.append(...children);
  return node;
}

function showStatus(text: string, failed = false): void {
  status.textContent = text;
  status.classList.toggle('failed', failed);
  status.setAttribute('role', failed ? 'alert' : 'status');
}

/** The saved queries of the OpenAPI document: one a name, with the id its other path is by. */
function queriesOf(doc: { paths: Record<string, { get?: { 'x-savedq-query'?: { name: string; id: string; sandbox?: boolean }; summary?: string; parameters?: Parameter[]; responses: Record<string, unknown> } }> }): Query[] {
  const found: Query[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    const get = item.get;
    const query = get?.['x-savedq-query'];
    // Each query is at its name and at its id: taken once, at its name.
    if (!get || !query || path !== `${QUERY_PREFIX}${query.name}`) continue;
    type Rows = { items?: { properties?: Record<string, Schema> } };
    const ok = get.responses['200'] as { content?: Record<string, { schema?: { properties?: { result?: Rows & { anyOf?: Rows[] } } } }> } | undefined;
    // A query that keeps older versions answers any of their rows: the current one's come first (the page runs it).
    const result = ok?.content?.['application/json']?.schema?.properties?.result;
    const properties = (result?.anyOf?.[0] ?? result)?.items?.properties ?? {};
    const parameters = get.parameters ?? [];
    // The SQL a sandboxed query takes is not one of its parameters: the page gives it a box of its own.
    const sql = query.sandbox === true ? parameters.find((p) => p.name === SQL_PARAM) : undefined;
    // The query's own parameters (savedq's type on each): not the SQL, nor the version pin (the page runs the current one).
    const own = parameters.filter((p) => p !== sql && 'x-savedq-type' in p);
    found.push({ name: query.name, id: query.id, summary: get.summary ?? '', parameters: own, fields: Object.entries(properties), ...(sql ? { sql } : {}) });
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * What the server shows a credential, asked of the server (its document for that caller): the page
 * decides nothing of who sees what. A credential it refuses sees the public list; running says why.
 */
async function viewOf(key: string): Promise<View> {
  if (key === '') return { queries: publicQueries, token: false };
  const response = await fetch('/openapi.json', { headers: { Authorization: `Bearer ${key}` } });
  if (!response.ok) return { queries: publicQueries, token: false };
  const doc = (await response.json()) as Parameters<typeof queriesOf>[0] & { 'x-savedq-caller'?: { kind?: string } };
  return { queries: queriesOf(doc), token: doc['x-savedq-caller']?.kind === 'token' };
}

/** What a form is built from: a view whose queries or fixed parameters differ needs another. */
const signatureOf = (v: View) => JSON.stringify([v.token, v.queries.map((q) => [q.name, fixedFor(q)])]);

/** The parameters the credential's token fixes for a query (none for a key), as the server's document says. */
function fixedFor(query: Query): Readonly<Record<string, string>> {
  return Object.fromEntries(query.parameters.flatMap((p) => (p['x-savedq-fixed'] === undefined ? [] : [[p.name, p['x-savedq-fixed']]])));
}

const suggestionsOf = (s: Schema): unknown[] => s.examples ?? s.items?.enum ?? s.items?.examples ?? [];
const isBoolean = (p: Parameter) => p['x-savedq-type'] === 'boolean';
const isTimestamp = (p: Parameter) => p['x-savedq-type'] === 'timestamp';

/** A form control for a parameter, by its schema: a list, a checkbox, a date, a bounded number, or text. */
function controlFor(p: Parameter, id: string): HTMLInputElement | HTMLSelectElement {
  const s = p.schema;
  const describedBy = `${id}-help`;
  const common = { id, name: p.name, 'aria-describedby': describedBy, required: p.required };
  if (isBoolean(p)) return el('input', { ...common, type: 'checkbox', checked: s.default === 'true', required: false });
  if (s.enum) {
    const select = el('select', common);
    if (!p.required) select.append(el('option', { value: '' }, s.default !== undefined ? `(default: ${String(s.default)})` : '(none)'));
    for (const v of s.enum) select.append(el('option', { value: String(v) }, String(v)));
    return select;
  }
  if (s.type === 'integer' || s.type === 'number') {
    return el('input', {
      ...common,
      type: 'number',
      step: s.type === 'integer' ? '1' : 'any',
      ...(s.minimum !== undefined ? { min: String(s.minimum) } : {}),
      ...(s.maximum !== undefined ? { max: String(s.maximum) } : {}),
      ...(s.default !== undefined ? { placeholder: `default: ${String(s.default)}` } : {}),
    });
  }
  if (isTimestamp(p)) return el('input', { ...common, type: 'datetime-local', step: '1' });
  if (p['x-savedq-type'] === 'date') return el('input', { ...common, type: 'date' });
  const input = el('input', { ...common, type: 'text', spellcheck: 'false', ...(s.default !== undefined ? { placeholder: `default: ${String(s.default)}` } : s.type === 'array' ? { placeholder: 'comma-separated' } : {}) });
  // Values a query knows well but does not insist on (`other: default`): offered, not imposed.
  if (suggestionsOf(s).length > 0) input.setAttribute('list', `${id}-values`);
  return input;
}

/** What a parameter's value means, said under its control. */
function helpFor(p: Parameter): string {
  const s = p.schema;
  const parts = [p.required ? 'Required.' : 'Optional.'];
  if (p.description) parts.push(p.description);
  if (isTimestamp(p)) parts.push('UTC.');
  if (s.default !== undefined) parts.push(`Default: ${String(s.default)}.`);
  if (s.minimum !== undefined || s.maximum !== undefined) parts.push(`From ${s.minimum ?? '…'} to ${s.maximum ?? '…'}.`);
  return parts.join(' ');
}

/** The form of the chosen query, its controls filled from `values`; a token's fixed parameters shown read-only. */
function buildForm(query: Query, values: URLSearchParams): void {
  const fixed = fixedFor(query);
  paramsBox.replaceChildren(el('legend', {}, `Parameters of ${query.name}`));
  queryHelp.textContent = query.summary;
  for (const p of query.parameters) {
    const id = `param-${p.name}`;
    const control = controlFor(p, id);
    const given = fixed[p.name] ?? values.get(p.name);
    if (given !== null && given !== undefined) setValue(control, given);
    const help = el('small', { id: `${id}-help` }, helpFor(p));
    if (fixed[p.name] !== undefined) {
      control.setAttribute('readonly', '');
      if (control instanceof HTMLSelectElement) control.disabled = true;
      control.dataset.fixed = 'true';
      help.textContent = `Fixed by your token: ${fixed[p.name]}. ${help.textContent ?? ''}`;
    }
    const label = el('label', { for: id }, p.name);
    const row = el('p', { class: 'field' }, label, control, help);
    const list = control.getAttribute('list');
    if (list) row.append(el('datalist', { id: list }, ...suggestionsOf(p.schema).map((v) => el('option', { value: String(v) }))));
    paramsBox.append(row);
  }
  if (query.sql) {
    const box = el('textarea', { id: 'query-sql', name: SQL_PARAM, rows: '4', spellcheck: 'false', placeholder: 'SELECT … FROM result', 'aria-describedby': 'query-sql-help' });
    box.value = values.get(SQL_PARAM) ?? '';
    const help = el('small', { id: 'query-sql-help' }, query.sql.schema.description ?? query.sql.description ?? '');
    paramsBox.append(el('p', { class: 'field' }, el('label', { for: 'query-sql' }, 'Your SQL over result (optional)'), box, help));
  }
  runButton.textContent = `Run ${query.name}`;
  showCommands();
}

/** A parameter's text as the URL carries it into its control (timestamps without their zone: the control is UTC). */
function setValue(control: HTMLInputElement | HTMLSelectElement, text: string): void {
  if (control instanceof HTMLInputElement && control.type === 'checkbox') control.checked = text === 'true' || text === '1';
  else if (control instanceof HTMLInputElement && control.type === 'datetime-local') control.value = text.replace(/Z$|[+-]00:?00$/, '').replace(/\.\d+$/, '');
  else control.value = text;
}

/** The call the form makes: the parameters it gives (empty ones left to their defaults), fixed ones apart. */
function formValues(query: Query): { given: [string, string][]; fixed: [string, string][]; sql: string } {
  const given: [string, string][] = [];
  const fixed: [string, string][] = [];
  for (const p of query.parameters) {
    const control = byId<HTMLInputElement | HTMLSelectElement>(`param-${p.name}`);
    let value: string;
    if (control instanceof HTMLInputElement && control.type === 'checkbox') {
      // Given only when it differs from the default: an untouched box leaves the query as it would be.
      const def = p.schema.default === 'true';
      if (control.checked === def && p.schema.default !== undefined) continue;
      if (!control.checked && p.schema.default === undefined) continue;
      value = String(control.checked);
    } else if (control instanceof HTMLInputElement && control.type === 'datetime-local') {
      value = control.value === '' ? '' : `${control.value.length === 16 ? `${control.value}:00` : control.value}Z`;
    } else value = control.value.trim();
    if (value === '') continue;
    (control.dataset.fixed ? fixed : given).push([p.name, value]);
  }
  const sql = query.sql ? byId<HTMLTextAreaElement>('query-sql').value.trim() : '';
  return { given, fixed, sql };
}

const selected = (): Query | undefined => view.queries.find((q) => q.name === querySelect.value);
const shellQuote = (text: string) => (/^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`);

/** The call's address on this server. */
function callUrl(query: Query, given: [string, string][]): string {
  const search = new URLSearchParams(given).toString();
  return `${QUERY_PREFIX}${encodeURIComponent(query.name)}${search ? `?${search}` : ''}`;
}

/** "Copy as curl" and "copy as savedq run", for what the form says now (the credential never in them). */
function showCommands(): void {
  const query = selected();
  if (!query) return;
  const { given, fixed, sql } = formValues(query);
  const url = new URL(callUrl(query, sql === '' ? given : [...given, [SQL_PARAM, sql]]), location.href).href;
  const header = credential.value.trim() === '' ? 'X-API-KEY: $SAVEDQ_KEY' : `Authorization: Bearer $SAVEDQ_${view.token ? 'TOKEN' : 'KEY'}`;
  asCurl.textContent = `curl -H "${header}" ${shellQuote(url)}`;
  asRun.textContent = ['savedq', 'run', query.name, ...[...fixed, ...given].flatMap(([k, v]) => ['-p', shellQuote(`${k}=${v}`)]), ...(sql === '' ? [] : ['--sql', shellQuote(sql)])].join(' ');
  commands.hidden = false;
}

/** The address of this page for the chosen query and its parameters: a link to share (no credential). */
function shareAddress(query: Query, given: [string, string][]): void {
  const search = new URLSearchParams(given).toString();
  history.replaceState(null, '', `#${encodeURIComponent(query.name)}${search ? `?${search}` : ''}`);
}

async function run(): Promise<void> {
  const query = selected();
  if (!query) return;
  const invalid = [...paramsBox.querySelectorAll<HTMLInputElement | HTMLSelectElement>('input, select')].find((c) => !c.checkValidity());
  if (invalid) {
    showStatus(`${invalid.name}: ${invalid.validationMessage}`, true);
    invalid.focus();
    return;
  }
  const { given, sql } = formValues(query);
  shareAddress(query, sql === '' ? given : [...given, [SQL_PARAM, sql]]);
  const key = credential.value.trim();
  clearAnswer();
  showStatus(`Running ${query.name}…`);
  runButton.disabled = true;
  const started = performance.now();
  try {
    // The browser's own cache mode: savedq's answers carry no freshness, so each run asks the server, and
    // no Cache-Control header goes with it (no-store would send no-cache, a refresh that skips savedq's cache).
    const auth: Record<string, string> = key === '' ? {} : { Authorization: `Bearer ${key}` };
    // SQL goes in a POST's body, whatever its length; the answer is the GET's, from the same cache.
    const response =
      sql === ''
        ? await fetch(callUrl(query, given), { headers: auth })
        : await fetch(callUrl(query, []), { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ params: Object.fromEntries(given), sql }) });
    const body = answerJson(await response.text()) as { result?: Row[]; truncated?: boolean; statistics?: { rows_read: number }; error?: { code: string; message: string } };
    const ms = Math.round(performance.now() - started);
    if (!response.ok || !body.result) {
      clearAnswer();
      const error = body.error ?? { code: String(response.status), message: response.statusText };
      showStatus(`${response.status} ${error.code}: ${error.message}`, true);
      return;
    }
    const cache = response.headers.get('X-Cache');
    const age = response.headers.get('Age');
    // What the answer says of itself: cut at max_rows, and what its run read.
    const cut = body.truncated ? ' (the first: the query has more)' : '';
    const read = body.statistics ? ` · read ${body.statistics.rows_read.toLocaleString('en-US')} rows` : '';
    showStatus(`${body.result.length} ${body.result.length === 1 ? 'row' : 'rows'}${cut} in ${ms} ms${cache ? ` · cache ${cache.toLowerCase()}${age ? `, ${age} s old` : ''}` : ''}${read}`);
    // The fields of an answer to SQL are the SQL's: read off its rows.
    showAnswer(sql === '' ? query : { ...query, fields: [] }, body.result);
  } catch (err) {
    clearAnswer();
    showStatus(`The server did not answer: ${err instanceof Error ? err.message : String(err)}`, true);
  } finally {
    runButton.disabled = false;
  }
}

function clearAnswer(): void {
  for (const chart of charts) chart.destroy();
  charts = [];
  chartBox.replaceChildren();
  table.replaceChildren();
  table.hidden = true;
}

/** A field's type as its schema in the OpenAPI document says it (the inverse of queries/json-schema.ts's fieldSchema). */
function fieldType(s: Schema): TableField['type'] {
  if (s.format === 'date-time') return 'timestamp';
  if (s.format === 'date') return 'date';
  return (['string', 'integer', 'number', 'boolean', 'object', 'array'] as const).find((t) => t === s.type) ?? 'string';
}

const isNumber = (f: TableField) => f.type === 'integer' || f.type === 'number';
const isTime = (f: TableField) => f.type === 'timestamp' || f.type === 'date';

/** The rows as a table, and as a chart when they are a time series (the rule `run -f chart` follows: output/shape.ts). */
function showAnswer(query: Query, rows: Row[]): void {
  clearAnswer();
  const fields = query.fields.length > 0 ? query.fields.map(([name, s]) => ({ name, type: fieldType(s) })) : fieldsOfRows(rows);
  // Cells as a terminal's table shows them (a column's decimals alike, instants to their unit, in UTC);
  // a header may wrap after each _, so that many numeric columns fit beside each other.
  const columns = fields.map((f) => columnTexts(rows.map((r) => r[f.name]), f.type, 'whole'));
  const header = (name: string) => name.split(/(?<=_)/).flatMap((piece, i) => (i === 0 ? [piece] : [el('wbr'), piece]));
  table.append(
    el('caption', {}, `${query.name}: ${rows.length} ${rows.length === 1 ? 'row' : 'rows'}`),
    el('thead', {}, el('tr', {}, ...fields.map((f) => el('th', { scope: 'col', ...(isNumber(f) ? { class: 'number' } : {}) }, ...header(f.name))))),
    el('tbody', {}, ...rows.map((_, i) => el('tr', {}, ...fields.map((f, c) => el('td', isNumber(f) ? { class: 'number' } : isTime(f) ? { class: 'time' } : {}, columns[c]?.[i] ?? ''))))),
  );
  table.hidden = false;
  const shape = chartShape(rows, fields);
  if (shape.kind !== 'series') return;
  const time = shape.time.name;
  const byTime = [...rows].sort((a, b) => Date.parse(String(a[time])) - Date.parse(String(b[time])));
  // A bucket with no row, where the step is known, is a gap (a null uPlot leaves undrawn), never a line across it.
  const step = bucketStep(byTime.map((r) => Date.parse(String(r[time]))));
  const sorted: (Row | undefined)[] = step === undefined ? byTime : [];
  if (step !== undefined) for (const r of byTime) sorted[Math.round((Date.parse(String(r[time])) - Date.parse(String(byTime[0]?.[time]))) / step)] = r;
  const instants = Array.from(sorted, (r, i) => (step === undefined ? Date.parse(String(r?.[time])) : Date.parse(String(byTime[0]?.[time])) + i * step) / 1000);
  // One chart, one y-axis, a unit: integers (counts) apart from decimals (times, rates), so that
  // counts in the thousands never flatten milliseconds into a line at 0.
  const integers = shape.numeric.filter((f) => f.type === 'integer').map((f) => f.name);
  const decimals = shape.numeric.filter((f) => f.type !== 'integer').map((f) => f.name);
  const units = [integers, decimals].filter((names) => names.length > 0);
  let colour = 0;
  for (const numeric of units) {
    const box = el('div', { class: 'chart', role: 'img', 'aria-label': `Chart of ${numeric.join(', ')} by ${time} (UTC), ${isoTime(instants[0])} to ${isoTime(instants.at(-1))}, ${rows.length} points; the table below has the numbers.` });
    chartBox.append(box);
    const data: uPlot.AlignedData = [instants, ...numeric.map((name) => Array.from(sorted, (r) => (typeof r?.[name] === 'number' ? (r[name]) : null)))];
    const series = numeric.map((name) => ({ label: name, stroke: COLORS[colour++ % COLORS.length] ?? 'black', width: 2, points: { show: byTime.length < 60 } }));
    charts.push(
      new uPlot(
        {
          title: `${query.name}: ${numeric.join(', ')}`,
          width: Math.max(320, chartBox.clientWidth),
          height: 260,
          scales: { x: { time: true } },
          // In UTC and ISO 8601, as the rows' timestamps are (not the browser's zone, nor its way of writing dates).
          tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC'),
          // Counts are ticked at whole numbers only (no "2.5 requests").
          axes: [{ label: `${time} (UTC)`, values: (_u, splits) => isoTicks(splits), space: 90 }, numeric === integers ? { incrs: WHOLE_STEPS } : {}],
          series: [{ label: time, value: (_u, v) => isoTime(v) }, ...series],
        },
        data,
        box,
      ),
    );
  }
}

/** Steps between ticks of a count: 1, 2, 5, 10, 20, 50, … */
const WHOLE_STEPS = Array.from({ length: 30 }, (_, i) => ([1, 2, 5][i % 3] ?? 1) * 10 ** Math.floor(i / 3));

/** An instant (seconds) as ISO 8601 UTC to the second, as a person reads it: `2026-11-25 09:30:00`. */
function isoTime(seconds: number | null | undefined): string {
  return seconds === null || seconds === undefined ? '' : new Date(seconds * 1000).toISOString().slice(0, 19).replace('T', ' ');
}

/** The time axis's labels in ISO 8601 UTC: the day where it changes (or alone, for whole days), the time under it. */
function isoTicks(splits: number[]): string[] {
  const wholeDays = splits.every((s) => s % 86_400 === 0);
  let day = '';
  return splits.map((s) => {
    const [date = '', clock = ''] = isoTime(s).split(' ');
    if (wholeDays) return date;
    const shown = date === day ? clock.slice(0, 5) : `${clock.slice(0, 5)}\n${date}`;
    day = date;
    return shown;
  });
}

/** The query list for the credential: a token's own queries only. */
function fillQueries(wanted: string | undefined): void {
  const shown = view.queries;
  const current = wanted ?? querySelect.value;
  querySelect.replaceChildren(...shown.map((q) => el('option', { value: q.name }, q.name)));
  if (shown.some((q) => q.name === current)) querySelect.value = current;
  tokenNote.hidden = !view.token;
  const fixes = shown.some((q) => Object.keys(fixedFor(q)).length > 0);
  tokenNote.textContent = view.token ? `This token opens ${shown.length} of ${publicQueries.length} saved queries${fixes ? ', some parameters fixed' : ''}.` : '';
}

/** The query and parameters of the page's address (`#name?param=value`). */
function fromAddress(): { name: string | undefined; values: URLSearchParams } {
  const hash = location.hash.slice(1);
  const q = hash.indexOf('?');
  const name = decodeURIComponent(q < 0 ? hash : hash.slice(0, q));
  return { name: name === '' ? undefined : name, values: new URLSearchParams(q < 0 ? '' : hash.slice(q + 1)) };
}

async function start(): Promise<void> {
  credential.value = sessionStorage.getItem(CREDENTIAL_KEY) ?? '';
  try {
    const response = await fetch('/openapi.json');
    publicQueries = queriesOf((await response.json()) as Parameters<typeof queriesOf>[0]);
    view = await viewOf(credential.value.trim());
    builtFor = signatureOf(view);
  } catch (err) {
    showStatus(`Could not read the saved queries: ${err instanceof Error ? err.message : String(err)}`, true);
    return;
  }
  const address = fromAddress();
  fillQueries(address.name);
  const query = selected();
  if (!query) {
    showStatus('No saved query to show.', true);
    return;
  }
  buildForm(query, address.name === query.name ? address.values : new URLSearchParams());
  if (address.name === query.name && credential.value !== '') await run();
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  void run();
});
querySelect.addEventListener('change', () => {
  const query = selected();
  if (query) buildForm(query, new URLSearchParams());
  clearAnswer();
  showStatus('');
});
/** The view the form was last built for: a new credential rebuilds it only when its view differs. */
let builtFor = '';
credential.addEventListener('change', () => {
  const key = credential.value.trim();
  sessionStorage.setItem(CREDENTIAL_KEY, key);
  showCommands();
  void viewOf(key).then((next) => {
    if (credential.value.trim() !== key) return; // another credential since: its own answer follows
    view = next;
    showCommands();
    // Rebuilt only for another view: rebuilding as focus leaves the field would drop what is typed next.
    const signature = signatureOf(next);
    if (signature === builtFor) return;
    builtFor = signature;
    fillQueries(undefined);
    const query = selected();
    if (query) buildForm(query, new URLSearchParams(formValues(query).given));
  });
});
paramsBox.addEventListener('input', showCommands);
paramsBox.addEventListener('change', showCommands);
for (const [button, source] of [
  [byId<HTMLButtonElement>('copy-curl'), asCurl],
  [byId<HTMLButtonElement>('copy-run'), asRun],
] as const) {
  button.addEventListener('click', () => {
    navigator.clipboard.writeText(source.textContent ?? '').then(
      () => showStatus(`Copied: ${source.textContent ?? ''}`),
      () => showStatus('The browser did not allow copying; select the command and copy it.', true),
    );
  });
}
void start();

/**
 * An answer's JSON as the browser reads it, but an integer a double cannot hold (a 64-bit one past
 * 2^53) as the text of every digit, where the browser tells a number's source text (JSON.parse's
 * context: Chromium 114 and later); elsewhere as near as a double gets. Not JSON: nothing.
 */
function answerJson(text: string): unknown {
  const reviver = (_key: string, value: unknown, context?: { source?: string }): unknown =>
    typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value) && context?.source !== undefined && /^-?\d+$/.test(context.source) ? context.source : value;
  try {
    return JSON.parse(text, reviver);
  } catch {
    return {};
  }
}


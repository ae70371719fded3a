import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, isAbsolute } from 'node:path';
import { DefinitionError, NotFoundError } from '../errors.js';
import { closest } from '../suggest.js';
import type { DefinitionProblem, ReadDefinition } from './definition.js';
import { NAME_PATTERN, type SavedQuery } from './types.js';

/** A definition file's text, with what its reading depends on besides: the name it gives by default, and whether it is a built-in. */
export interface DefinitionSource {
  /** Changes whenever reading a definition changes, so a reading by other code is never taken. */
  readonly version: number;
  readonly stem: string;
  readonly builtin: boolean;
  readonly text: string;
}

/** A source as a memo's key: the whole of it (exact; no digest to compute). */
export function sourceKey(source: DefinitionSource): string {
  return `${source.version}:${source.builtin ? 'b' : 'u'}:${source.stem}:${source.text}`;
}

/**
 * Definitions read elsewhere, by their source (a pure function of it): the results cache remembers
 * them, and a running `serve` reads them for the processes it serves, so a run need not load the YAML
 * parser nor read a header.
 */
export interface DefinitionMemo {
  /** The reading of a valid definition (a SavedQuery without its file, and the lines of its name and id), if known. */
  get(source: DefinitionSource): Promise<unknown>;
  set(source: DefinitionSource, reading: unknown): Promise<void>;
}

/** Changes whenever reading a definition changes, so a memo of an older reading is never used. */
export const READER_VERSION = 1;

/**
 * Reads a definition from its source, as a memo keeps it: the query without its file, and the lines of
 * its name and id; undefined when it is broken (its problems are for the process that has the file).
 */
export async function readSource(source: DefinitionSource): Promise<unknown> {
  if (source.version !== READER_VERSION) return undefined;
  const read = (await definitionReader())('', source.text, source.stem, source.builtin);
  // The file is the asking process's to name: it takes the reading for its own file.
  return read.query ? { ...read.query, lines: read.lines } : undefined;
}

type Reader = (file: string, text: string, defaultName: string, builtin: boolean) => ReadDefinition;
/** The definition reader (and the YAML parser under it), loaded on first use: a memo hit needs neither. */
let reader: Promise<Reader> | undefined;
function definitionReader(): Promise<Reader> {
  reader ??= import('./definition.js').then((m) => m.readDefinition);
  return reader;
}

/** Where saved queries are read from. */
export interface QueryFolders {
  /** The built-in queries, shipped with savedq. */
  readonly builtin: string;
  /** The user's folders, in the order given: every `*.sql` directly in each. */
  readonly user: readonly string[];
}

/** A definition file that cannot be used, with everything wrong with it. */
export interface BrokenDefinition {
  readonly file: string;
  readonly problems: readonly DefinitionProblem[];
}

/** Every definition of the folders, read and checked together. */
export interface CatalogScan {
  /** The usable queries: the built-ins first, then each folder's, by file name. */
  readonly queries: readonly SavedQuery[];
  /** The files that cannot be used (and folders that cannot be read). */
  readonly broken: readonly BrokenDefinition[];
}

/** A scan with its queries by name and by id. */
interface IndexedScan extends CatalogScan {
  readonly byName: ReadonlyMap<string, SavedQuery>;
  readonly byId: ReadonlyMap<string, SavedQuery>;
}

/** A problem as one line: `file:line: message`, the file shown relative to the current directory when inside it. */
export function problemText(problem: DefinitionProblem): string {
  return `${displayPath(problem.file)}${problem.line > 0 ? `:${problem.line}` : ''}: ${problem.message}`;
}

/** A broken definition as one warning line: its first problem, and how many more there are. */
export function brokenText(broken: BrokenDefinition): string {
  const [first] = broken.problems;
  const more = broken.problems.length - 1;
  return `${first ? problemText(first) : displayPath(broken.file)}${more > 0 ? ` (and ${more} more; see savedq check)` : ''}`;
}

/** A path as a user would type it: relative to the current directory when inside it, else ~/… when in the home folder. */
export function displayPath(file: string): string {
  const inside = (dir: string | undefined) => {
    const rel = dir ? relative(dir, file) : '';
    return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : undefined;
  };
  const here = inside(process.cwd());
  if (here !== undefined) return here;
  const home = inside(process.env.HOME);
  return home !== undefined ? `~/${home}` : file;
}

/** A definition file as read: its query, or its problems. */
interface ReadFile {
  readonly file: string;
  /** The file name without `.sql`. */
  readonly stem: string;
  readonly builtin: boolean;
  readonly query?: SavedQuery;
  readonly lines?: { readonly name: number; readonly id: number };
  readonly problems: DefinitionProblem[];
}

/**
 * The saved queries savedq knows: the built-ins and the user's folders (CONTRACT §8). A value, not a
 * module constant: the library is given one, and `serve` swaps in a new one on SIGHUP.
 *
 * Finding a query by name reads only the files that carry its name (`<name>.sql` in each folder), so a
 * cache hit does not pay for a folder of many definitions; anything else (an id, a name given in a
 * header, `list`, `check`, warming) reads every file once. Clashes of names across folders are seen
 * both ways; a clash of ids, or with a name set in another file's header, only when every file is read
 * (`check`, `list`, `serve`).
 */
export class QueryCatalog {
  readonly folders: QueryFolders;
  #scan: IndexedScan | undefined;

  constructor(folders: QueryFolders) {
    this.folders = folders;
  }

  /** Reads every definition (once) and checks them together: a name or an id defined twice is broken. */
  async scan(): Promise<IndexedScan> {
    if (this.#scan) return this.#scan;
    const read = await definitionReader();
    const files: ReadFile[] = [];
    const broken: BrokenDefinition[] = [];
    for (const [dir, builtin] of this.#dirs()) {
      let names: string[];
      try {
        names = readdirSync(dir).filter((n) => n.endsWith('.sql')).sort();
      } catch (err) {
        broken.push({ file: dir, problems: [{ file: dir, line: 0, message: `cannot read the queries folder: ${reasonOf(err)}.` }] });
        continue;
      }
      for (const name of names) {
        const file = join(dir, name);
        if (isFile(file)) files.push(readFile(read, file, builtin));
      }
    }
    markClashes(files, 'name', (f) => f.query?.name);
    markClashes(files, 'id', (f) => f.query?.id);

    const queries = files.filter((f) => f.query && f.problems.length === 0).map((f) => f.query as SavedQuery);
    for (const f of files) if (f.problems.length > 0) broken.push({ file: f.file, problems: f.problems });
    this.#scan = {
      queries,
      broken,
      byName: new Map(queries.map((q) => [q.name, q])),
      byId: new Map(queries.map((q) => [q.id, q])),
    };
    return this.#scan;
  }

  /**
   * The saved query with this name or id. An unknown one is a NotFoundError that suggests the closest
   * name; a broken one is a DefinitionError naming its file and line.
   *
   * @param memo definitions read before, consulted and filled when finding a query by its file name.
   */
  async find(nameOrId: string, memo?: DefinitionMemo): Promise<SavedQuery> {
    const key = nameOrId.trim();
    if (!this.#scan && NAME_PATTERN.test(key)) {
      const found = await this.#findByFileName(key, memo);
      if (found) return found;
    }
    const scan = await this.scan();
    const query = scan.byName.get(key) ?? scan.byId.get(key.toLowerCase());
    if (query) return query;
    const broken = scan.broken.find((b) => b.file.endsWith('.sql') && stemOf(b.file) === key);
    if (broken) throw definitionError(broken);
    const names = scan.queries.map((q) => q.name);
    const guess = closest(key, names);
    const hint = guess ? ` Did you mean ${guess}?` : '';
    const all = names.length <= 12 ? ` Endpoints: ${names.join(', ')}.` : ' See savedq list.';
    throw new NotFoundError(`unknown endpoint '${key}'.${hint}${all}`);
  }

  /** The scan, if every definition has been read already (for warnings about broken ones). */
  scanned(): CatalogScan | undefined {
    return this.#scan;
  }

  /** The query with this id, if it is usable (cache entries name queries by id). */
  async byId(id: string): Promise<SavedQuery | undefined> {
    return (await this.scan()).byId.get(id);
  }

  /** `<name>.sql` in each folder: the query it defines, when one of them defines it under that name. */
  async #findByFileName(name: string, memo: DefinitionMemo | undefined): Promise<SavedQuery | undefined> {
    const read: ReadFile[] = [];
    for (const [dir, builtin] of this.#dirs()) {
      const file = join(dir, `${name}.sql`);
      if (isFile(file)) read.push(await readFileMemo(file, builtin, memo));
    }
    // A built-in keeps its name: a user's file of the same name is the broken one.
    const builtin = read.find((f) => f.builtin && f.query?.name === name);
    if (builtin) return builtin.query;
    markClashes(read, 'name', (f) => f.query?.name);
    const named = read.filter((f) => f.problems.length > 0 || f.query?.name === name);
    const broken = named.find((f) => f.problems.length > 0);
    if (broken) throw definitionError(broken);
    return named[0]?.query;
  }

  #dirs(): [string, boolean][] {
    return [[this.folders.builtin, true], ...this.folders.user.map((dir): [string, boolean] => [dir, false])];
  }
}

/** The error of running a broken definition: its first problem, and how many more. */
function definitionError(broken: BrokenDefinition): DefinitionError {
  return new DefinitionError(brokenText(broken));
}

/** A definition file's text, or a problem saying why it cannot be read. */
function fileText(file: string): { text: string } | { problem: DefinitionProblem } {
  try {
    return { text: readFileSync(file, 'utf8') };
  } catch (err) {
    return { problem: { file, line: 0, message: `cannot read the file: ${reasonOf(err)}.` } };
  }
}

function readFile(read: Reader, file: string, builtin: boolean, text = fileText(file)): ReadFile {
  const stem = stemOf(file);
  if ('problem' in text) return { file, stem, builtin, problems: [text.problem] };
  const definition = read(file, text.text, stem, builtin);
  return definition.query
    ? { file, stem, builtin, query: definition.query, lines: definition.lines, problems: [] }
    : { file, stem, builtin, problems: [...definition.problems] };
}

/**
 * Reads a definition file, through the memo when there is one: a file whose exact text was read before
 * (under the same name, from the same kind of folder) is not parsed again.
 */
async function readFileMemo(file: string, builtin: boolean, memo: DefinitionMemo | undefined): Promise<ReadFile> {
  const text = fileText(file);
  if (!memo || 'problem' in text) return readFile(await definitionReader(), file, builtin, text);
  const stem = stemOf(file);
  const source: DefinitionSource = { version: READER_VERSION, stem, builtin, text: text.text };
  const known = (await memo.get(source)) as (SavedQuery & { lines: ReadFile['lines'] }) | undefined;
  if (known) {
    const { lines, ...query } = known;
    return { file, stem, builtin, query: { ...query, file }, lines, problems: [] };
  }
  const read = readFile(await definitionReader(), file, builtin, text);
  if (read.query) await memo.set(source, { ...read.query, lines: read.lines });
  return read;
}

/**
 * Marks every file that shares a name (or an id) with another as broken, naming the other file. A
 * built-in is never the broken one: a user's file cannot take a built-in's name or id.
 */
function markClashes(files: readonly ReadFile[], what: 'name' | 'id', keyOf: (f: ReadFile) => string | undefined): void {
  const groups = new Map<string, ReadFile[]>();
  for (const f of files) {
    const key = f.problems.length === 0 ? keyOf(f) : undefined;
    if (key !== undefined) groups.set(key, [...(groups.get(key) ?? []), f]);
  }
  for (const [key, group] of groups) {
    if (group.length < 2) continue;
    const builtin = group.find((f) => f.builtin);
    for (const f of group) {
      if (f.builtin) continue;
      const others = builtin ? [builtin] : group.filter((g) => g !== f);
      const line = f.lines?.[what] ?? 1;
      const whose = builtin ? `the built-in query in ${displayPath(builtin.file)}` : others.map((o) => displayPath(o.file)).join(', ');
      f.problems.push({ file: f.file, line, message: `${what} '${key}' is also defined by ${whose}.` });
    }
  }
}

function stemOf(file: string): string {
  const base = file.slice(Math.max(file.lastIndexOf('/'), file.lastIndexOf('\\')) + 1);
  return base.endsWith('.sql') ? base.slice(0, -4) : base;
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function reasonOf(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such directory';
  if (code === 'ENOTDIR') return 'not a directory';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  return code ?? String(err);
}

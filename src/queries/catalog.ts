import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, isAbsolute, parse, sep } from 'node:path';
import { DefinitionError, GoneError, InputError, NotFoundError } from '../errors.js';
import { errnoText } from '../errno.js';
import { closest } from '../suggest.js';
import type { DefinitionProblem, ReadDefinition } from './definition.js';
import { keptVersionOf, splitVersion, sunsetText, versionRef } from './version-ref.js';
import type { SavedQuery } from './types.js';
import { memoKeys } from '../store/memo.js';
import type { LocalMemo } from '../store/types.js';


/** Changes whenever reading a definition changes, so a memo of an older reading is never used. */
const READER_VERSION = 5;

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
  /** The name and id its header gives, those that read well (a clash, or a problem elsewhere in the file). */
  readonly name?: string | undefined;
  readonly id?: string | undefined;
}

/** Every definition of the folders, read and checked together. */
export interface CatalogScan {
  /** The usable queries, each at its current version: the built-ins first, then each folder's, by file name. */
  readonly queries: readonly SavedQuery[];
  /** The older versions kept callable (`<name>@<N>.sql`), usable, by file name. */
  readonly kept: readonly SavedQuery[];
  /** The usable versions of each query, by name, lowest first (the last is the current one). */
  readonly versions: ReadonlyMap<string, readonly number[]>;
  /** The files that cannot be used (and folders that cannot be read). */
  readonly broken: readonly BrokenDefinition[];
}

/** A scan with its queries by name and by id (the current version), and each version by `name@N` and `id@N`. */
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

/**
 * A path as a user would type it: relative to the current directory when inside it, else ~/… when in
 * the home folder; ~/… too from the home folder itself or a directory above it (`/home`: not `me/.config/…`).
 * Never relative to `/` (where cron and systemd start a command): `root/.config/…` reads as a mistake.
 */
export function displayPath(file: string): string {
  const inside = (dir: string | undefined, path = file) => {
    const rel = dir ? relative(dir, path) : '';
    return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : undefined;
  };
  const home = inside(process.env.HOME);
  const cwd = process.cwd();
  const here = cwd === parse(cwd).root ? undefined : inside(cwd);
  if (here !== undefined && (home === undefined || inside(process.env.HOME, cwd) !== undefined)) return here;
  return home !== undefined ? `~/${home}` : file;
}

/** A definition file as read: its query, or its problems. */
interface ReadFile {
  readonly file: string;
  /** The file name without `.sql`. */
  readonly stem: string;
  readonly builtin: boolean;
  /** Whether it keeps an older version (`<name>@<N>.sql`). */
  readonly kept: boolean;
  readonly query?: SavedQuery;
  readonly lines?: { readonly name: number; readonly id: number };
  readonly problems: DefinitionProblem[];
  /** A broken file's name and id as its header gives them (ReadDefinition's `declared`). */
  readonly declared?: { readonly name: string | undefined; readonly id: string | undefined } | undefined;
}

/**
 * Which file defines each usable name and id in a set of folders, and what identified the folders'
 * files when it was made (#identity): it holds while they still are so.
 */
interface FolderIndex {
  readonly identity: string;
  readonly names: Readonly<Record<string, string>>;
  readonly ids: Readonly<Record<string, string>>;
}

/**
 * Files changed this recently are not trusted to an index: a file rewritten within the same tick of the
 * file system's clock, at the same size, would look unchanged (git's "racy" entries, handled as git does).
 */
const SETTLED_MS = 2_000;

/**
 * The saved queries savedq knows: the built-ins and the user's folders (README, "Your own saved
 * queries"). A value, not a module constant: the library is given one, and `serve` swaps in a new one on
 * SIGHUP.
 *
 * A name or an id is one file or an error, whichever way a query is found: by name or id, every file's
 * name and id count, so a file that another file's header clashes with is broken for a run as it is for
 * `list` and `check`. Reading every header costs a YAML parse each; the memo keeps each definition's
 * reading by its exact text, and for folders whose files have not changed, which file defines which
 * name and id, so a run reads one definition's file and stats the others.
 */
export class QueryCatalog {
  readonly folders: QueryFolders;
  readonly #memo: LocalMemo | undefined;
  #scan: IndexedScan | undefined;

  constructor(folders: QueryFolders, memo?: LocalMemo) {
    this.folders = folders;
    this.#memo = memo;
  }

  /** The same folders, read afresh (serve on SIGHUP), with the same memo. */
  reread(): QueryCatalog {
    return new QueryCatalog(this.folders, this.#memo);
  }

  /** Reads every definition (once) and checks them together: a name or an id defined twice is broken. */
  async scan(): Promise<IndexedScan> {
    this.#scan ??= await this.#readAll();
    return this.#scan;
  }

  /** Reads every definition afresh and checks them together. */
  async #readAll(): Promise<IndexedScan> {
    const files: ReadFile[] = [];
    const broken: BrokenDefinition[] = [];
    for (const [dir, builtin] of this.#dirs()) {
      let names: string[];
      try {
        names = definitionFiles(dir);
      } catch (err) {
        broken.push({ file: dir, problems: [{ file: dir, line: 0, message: `cannot read the queries folder: ${errnoText(err, 'folder')}.` }] });
        continue;
      }
      for (const name of names) {
        const file = join(dir, name);
        if (isFile(file)) files.push(await this.#read(file, builtin));
      }
    }
    markClashes(files, 'name');
    markClashes(files, 'id');
    markKeptVersions(files);

    const usable = files.filter((f) => f.query && f.problems.length === 0);
    const queries = usable.filter((f) => !f.kept).map((f) => f.query as SavedQuery);
    const kept = usable.filter((f) => f.kept).map((f) => f.query as SavedQuery);
    for (const f of files) if (f.problems.length > 0) broken.push({ file: f.file, problems: f.problems, name: f.query?.name ?? f.declared?.name, id: f.query?.id ?? f.declared?.id });
    const every = [...queries, ...kept];
    const versions = new Map<string, number[]>();
    for (const q of every) versions.set(q.name, [...(versions.get(q.name) ?? []), q.version].sort((a, b) => a - b));
    return {
      queries,
      kept,
      broken,
      versions,
      // By name and by id, and each version by `name@N` and `id@N` (the current one too).
      byName: new Map([...queries.map((q): [string, SavedQuery] => [q.name, q]), ...every.map((q): [string, SavedQuery] => [`${q.name}@${q.version}`, q])]),
      byId: new Map([...queries.map((q): [string, SavedQuery] => [q.id, q]), ...every.map((q): [string, SavedQuery] => [`${q.id}@${q.version}`, q])]),
    };
  }

  /**
   * The saved query with this name or id, at a version when one is asked (`name@N`, or `version`),
   * else its current one. An unknown one is a NotFoundError that suggests the closest name (an unknown
   * version one listing the versions there are); a broken one (a clash included) is a DefinitionError
   * naming its file and line; a version past its sunset a GoneError naming the current one.
   */
  async find(nameOrId: string, version?: number): Promise<SavedQuery> {
    const split = splitVersion(nameOrId.trim());
    if (version !== undefined && split.version !== undefined && version !== split.version) {
      throw new InputError(`two versions asked: ${split.version} (in ${nameOrId.trim()}) and ${version}; ask one.`);
    }
    const asked = version ?? split.version;
    const key = asked === undefined ? split.key : `${split.key}@${asked}`;
    const query = await this.#lookUp(key);
    if (!query) return this.#notFound(split.key, asked);
    if (query.sunsetMs !== undefined && Date.now() >= query.sunsetMs) {
      const current = await this.#lookUp(split.key).catch(() => undefined);
      const now = current ? ` The current version is ${current.version}: call ${current.name}${current.version === 1 ? '' : ` (or ${versionRef(current)})`}.` : '';
      throw new GoneError(`version ${query.version} of ${query.name} was retired on ${sunsetText(query.sunsetMs)}.${now}`);
    }
    return query;
  }

  /** The query of a key (a name or id, `@N` or not), or undefined when no usable file defines it. */
  async #lookUp(key: string): Promise<SavedQuery | undefined> {
    if (!this.#scan) {
      // Until every definition has been read for good (list, serve), each call reads the files anew.
      const found = await this.#findByIndex(key);
      if (found) return found;
    }
    const scan = await this.scan();
    return scan.byName.get(key) ?? scan.byId.get(key.toLowerCase());
  }

  /** Why a name or id (at a version, if asked) finds no query: its broken file, its versions, or the closest name. */
  async #notFound(key: string, version: number | undefined): Promise<never> {
    const scan = await this.scan();
    const ref = `${key}@${version}`;
    const definitions = scan.broken.filter((b) => b.file.endsWith('.sql'));
    // A version asked whose own file (name@N.sql) is broken.
    const itsFile = version === undefined ? [] : definitions.filter((b) => stemOf(b.file) === ref);
    if (itsFile.length > 0) throw definitionError(itsFile);
    const known = version === undefined ? undefined : (scan.byName.get(key) ?? scan.byId.get(key.toLowerCase()));
    const versions = known ? scan.versions.get(known.name) : undefined;
    if (known && versions) {
      throw new NotFoundError(`${known.name} has no version ${version}; its versions: ${versions.join(', ')} (${known.version} the current one).`);
    }
    // The query's own file broken (its current version, when a version was asked and its file is fine).
    const broken = definitions.filter((b) => stemOf(b.file) === key || b.name === key || b.id === key.toLowerCase());
    if (broken.length > 0) throw definitionError(broken);
    const names = scan.queries.map((q) => q.name);
    const guess = closest(key, names);
    const hint = guess ? ` Did you mean ${guess}?` : '';
    const all = names.length <= 12 ? ` Queries: ${names.join(', ')}.` : ' See savedq list.';
    throw new NotFoundError(`unknown query '${key}'.${hint}${all}`);
  }

  /** The scan, if every definition has been read already. */
  scanned(): CatalogScan | undefined {
    return this.#scan;
  }

  /**
   * The query of a name or id by the memo's index of the folders, when the folders' files have not
   * changed since it was made (else from reading them all, which makes the index again): one file read,
   * the others only stat'ed. Undefined when no usable file defines it (unknown, or broken: `find` then
   * says why).
   */
  async #findByIndex(key: string): Promise<SavedQuery | undefined> {
    const identity = this.#memo ? this.#identity() : undefined;
    // Kept by the folders (a short key), the identity inside: 200 files' identities hashed into a memo
    // file's name on every run took longer than reading them.
    const indexKey = identity === undefined ? undefined : memoKeys.index(READER_VERSION, this.#dirs().map(([dir]) => dir));
    const kept = indexKey === undefined ? undefined : ((await this.#memo?.get(indexKey)) as Partial<FolderIndex> | undefined);
    const index = kept?.identity === identity ? (kept as FolderIndex) : undefined;
    if (!index) {
      const all = await this.#readAll();
      if (indexKey !== undefined && identity !== undefined) {
        const made: FolderIndex = {
          identity,
          names: Object.fromEntries([...all.byName].map(([key, q]) => [key, q.file])),
          ids: Object.fromEntries([...all.byId].map(([key, q]) => [key, q.file])),
        };
        await this.#memo?.set(indexKey, made);
      }
      return all.byName.get(key) ?? all.byId.get(key.toLowerCase());
    }
    const file = index.names[key] ?? index.ids[key.toLowerCase()];
    if (file === undefined) return undefined;
    const read = await this.#read(file, file.startsWith(this.folders.builtin));
    // The index said which file; the file itself must still say so (else the whole scan decides).
    const query = read.query;
    const { key: asked, version } = splitVersion(key);
    return query && (query.name === asked || query.id === asked.toLowerCase()) && (version === undefined || query.version === version) ? query : undefined;
  }

  /**
   * What identifies the folders' definition files: each one's name, size, inode and times. Undefined
   * when a file changed too recently to tell a later change apart, or a folder cannot be read.
   */
  #identity(): string | undefined {
    const parts: string[] = [];
    // In milliseconds (with their fraction), not nanoseconds as BigInts: a change after the index was
    // made is seconds after anything it trusted (SETTLED_MS), and BigInt stats cost a run more (docs/performance.md).
    const settled = Date.now() - SETTLED_MS;
    for (const [dir] of this.#dirs()) {
      let names: string[];
      try {
        names = definitionFiles(dir);
      } catch {
        return undefined;
      }
      parts.push(dir);
      const prefix = join(dir, '.') + sep; // joined once, not for each file
      for (const name of names) {
        const stat = statSync(prefix + name, { throwIfNoEntry: false });
        if (!stat?.isFile()) continue;
        if (stat.mtimeMs > settled || stat.ctimeMs > settled) return undefined;
        parts.push(`${name}/${stat.size}/${stat.ino}/${stat.mtimeMs}/${stat.ctimeMs}`);
      }
    }
    return parts.join('\n');
  }

  /**
   * Reads a definition file, through the memo when there is one: a file whose exact text was read
   * before (under the same name, from the same kind of folder) is not parsed again.
   */
  async #read(file: string, builtin: boolean): Promise<ReadFile> {
    const stem = stemOf(file);
    const kept = keptVersionOf(stem) !== undefined;
    const text = fileText(file);
    if ('problem' in text) return { file, stem, builtin, kept, problems: [text.problem] };
    const key = memoKeys.definition(READER_VERSION, builtin, stem, text.text);
    const known = (await this.#memo?.get(key)) as (Omit<SavedQuery, 'file'> & { lines: ReadFile['lines'] }) | undefined;
    if (known) {
      const { lines, ...query } = known;
      return { file, stem, builtin, kept, query: { ...query, file }, lines, problems: [] };
    }
    const definition = (await definitionReader())(file, text.text, stem, builtin);
    if (!definition.query) return { file, stem, builtin, kept, problems: [...definition.problems], declared: definition.declared };
    // The file is the reading process's own to name: a reading is taken for a file of the same text.
    await this.#memo?.set(key, { ...definition.query, file: undefined, lines: definition.lines });
    return { file, stem, builtin, kept, query: definition.query, lines: definition.lines, problems: [] };
  }

  #dirs(): [string, boolean][] {
    return [[this.folders.builtin, true], ...this.folders.user.map((dir): [string, boolean] => [dir, false])];
  }
}

/** The definition files of a folder, by name. */
function definitionFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => n.endsWith('.sql'))
    .sort();
}

/** The error of running broken definitions: each one's first problem, and how many more. */
function definitionError(broken: readonly BrokenDefinition[]): DefinitionError {
  return new DefinitionError(broken.map(brokenText).join('\n'), { files: broken.map((b) => b.file) });
}

/** A definition file's text, or a problem saying why it cannot be read. */
function fileText(file: string): { text: string } | { problem: DefinitionProblem } {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    return { problem: { file, line: 0, message: `cannot read the file: ${errnoText(err, 'file')}.` } };
  }
  const text = bytes.toString('utf8');
  // Bytes that are not UTF-8 come back as U+FFFD, and do not encode to themselves again.
  const notUtf8 = !Buffer.from(text, 'utf8').equals(bytes);
  const at = notUtf8 ? text.indexOf('\uFFFD') : text.indexOf('\0');
  if (notUtf8 || at >= 0) {
    const line = (text.slice(0, Math.max(0, at)).match(/\n/g)?.length ?? 0) + 1;
    return { problem: { file, line, message: `this file is not text a saved query can be: it holds ${notUtf8 ? 'bytes that are not UTF-8' : 'a NUL byte'}.` } };
  }
  return { text };
}

/**
 * Marks every file that shares a name (or an id) with another as broken, naming the other file. A
 * built-in is never the broken one: a user's file cannot take a built-in's name or id, at any version.
 * Files of one name are versions of one query: they share its id, and clash by name only at the same version.
 */
function markClashes(files: readonly ReadFile[], what: 'name' | 'id'): void {
  const groups = new Map<string, ReadFile[]>();
  for (const f of files) {
    const key = f.problems.length === 0 ? f.query?.[what] : undefined;
    if (key !== undefined) groups.set(key, [...(groups.get(key) ?? []), f]);
  }
  for (const [key, group] of groups) {
    if (group.length < 2) continue;
    const builtin = group.find((f) => f.builtin);
    for (const f of group) {
      if (f.builtin) continue;
      const version = f.query?.version ?? 1;
      const others = builtin
        ? [builtin]
        : group.filter((g) => g !== f && (what === 'name' ? g.query?.version === version : g.query?.name !== f.query?.name));
      if (others.length === 0) continue;
      const line = f.lines?.[what] ?? 1;
      const whose = builtin ? `the built-in query in ${displayPath(builtin.file)}` : others.map((o) => displayPath(o.file)).join(', ');
      const which = what === 'name' && !builtin && (version > 1 || f.kept) ? ` version ${version}` : '';
      f.problems.push({ file: f.file, line, message: `${what} '${key}'${which} is also defined by ${whose}.` });
    }
  }
}

/**
 * Marks each kept version (`<name>@<N>.sql`) that cannot be one: with no file of its query's current
 * version, not older than the current one, or with an id of its own.
 */
function markKeptVersions(files: readonly ReadFile[]): void {
  const currentOf = (name: string) => files.find((f) => !f.kept && (f.query?.name ?? f.declared?.name ?? f.stem) === name);
  for (const f of files) {
    if (!f.kept || !f.query || f.problems.length > 0) continue;
    const { name, version, id } = f.query;
    const current = currentOf(name);
    if (!current) {
      f.problems.push({ file: f.file, line: 1, message: `this file keeps version ${version} of '${name}', but no ${name}.sql holds its current version (savedq version ${name} makes both).` });
    } else if (current.query && current.problems.length === 0 && current.query.version < version) {
      f.problems.push({ file: f.file, line: 1, message: `version ${version} is not older than the current version ${current.query.version} of '${name}' (in ${displayPath(current.file)}): the file without @ holds the highest version; raise its version:.` });
    } else if (current.query && current.query.id !== id) {
      f.problems.push({ file: f.file, line: f.lines?.id ?? 1, message: `its id ${id} is not the id of '${name}' (${current.query.id}, in ${displayPath(current.file)}): a query keeps its id across versions.` });
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

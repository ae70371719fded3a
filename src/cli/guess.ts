import type { Command, CommanderError } from 'commander';
import type { QueryCatalog } from '../queries/catalog.js';
import { closest } from '../suggest.js';
import { plural } from '../words.js';

/** Commander's messages for a flag no command takes (`--api-key=x` too) and a command there is not: savedq guesses, not commander. */
const UNKNOWN_OPTION = /^unknown option '(--[^'=]+)(=[^']*)?'\n$/;
const UNKNOWN_COMMAND = /^unknown command '([^']+)'\n$/;
const TOO_MANY_ARGUMENTS = /^too many arguments for '[^']+'\./;
const MISSING_QUERY = /^missing required argument 'query'/;
/** How many query names a command missing its query lists before it says how many there are. */
const QUERY_NAMES_SHOWN = 6;

/** The saved queries a command's flags name (its --queries folders): what a guess reads. */
export type CatalogOf = (command: Command) => QueryCatalog;

/** An error sayErrors said without a guess: hintsAfter may still guess a parameter from an unknown flag in it. */
let unguessed: { command: Command; said: string } | undefined;

/**
 * Each command's errors as savedq says them, on one line after `savedq: `, and a guess on the next
 * for an unknown option or command, as queries, parameters and fields are guessed (`closest`, one
 * rule for all): among the command's flags and its parents' (one the flag starts too: `--api-key`
 * for --api-key-file), or among its subcommands.
 */
export function sayErrors(command: Command): void {
  command.configureOutput({
    outputError: (text, write) => {
      const said = text.replace(/^error: /, '');
      const guess = guessAfter(command, said);
      if (guess === undefined) unguessed = { command, said };
      write(`savedq: ${said}${guess === undefined ? '' : `(Did you mean ${guess}?)\n`}`);
    },
  });
  command.commands.forEach(sayErrors);
}

/**
 * What savedq adds after commander's own error: the parameters an unknown flag or a word too many
 * meant (`-p project=acme`), or the saved queries' names for a command missing its query.
 */
export async function hintsAfter(err: CommanderError, catalogOf: CatalogOf): Promise<{ guess?: string; names?: string }> {
  if (!unguessed) return {};
  const { command, said } = unguessed;
  if (err.code === 'commander.unknownOption' || err.code === 'commander.excessArguments') {
    const guess = await parameterGuess(unguessed, catalogOf);
    return guess === undefined ? {} : { guess };
  }
  if (err.code === 'commander.missingArgument' && MISSING_QUERY.test(said)) {
    const names = await queryNames(() => catalogOf(command));
    return names === undefined ? {} : { names };
  }
  return {};
}

/** What a command's error about an unknown option or subcommand guesses was meant. */
function guessAfter(command: Command, said: string): string | undefined {
  const [, flag] = UNKNOWN_OPTION.exec(said) ?? [];
  if (flag !== undefined) {
    const names: string[] = [];
    for (let c: Command | null = command; c; c = c.parent) names.push(...c.options.flatMap((o) => (o.hidden || o.long === undefined ? [] : [o.long.slice(2)])));
    const guess = closest(flag.slice(2), names);
    return guess === undefined ? undefined : `--${guess}`;
  }
  const [, name] = UNKNOWN_COMMAND.exec(said) ?? [];
  return name === undefined ? undefined : closest(name, command.commands.map((c) => c.name()));
}

/**
 * `-p project=acme` for `run logs.all --project acme` or `run logs.all project=acme`, as the one line
 * after commander's (an unknown option, too many arguments): words of a command that takes -p, named
 * as a parameter of its query (of any saved query when the query is not known) or close to one
 * (`--project acme --interval daily`). Undefined when the word commander blamed names none, or the
 * queries cannot be read.
 */
async function parameterGuess({ command, said }: { command: Command; said: string }, catalogOf: CatalogOf): Promise<string | undefined> {
  const [, flag, value = ''] = UNKNOWN_OPTION.exec(said) ?? [];
  if ((flag === undefined && !TOO_MANY_ARGUMENTS.test(said)) || !command.options.some((o) => o.long === '--param')) return undefined;
  const named = command.args[0]?.startsWith('-') === false;
  let params: string[];
  try {
    const queries = catalogOf(command);
    const asked = named ? await queries.find(command.args[0] ?? '').catch(() => undefined) : undefined;
    params = [...new Set((asked ? [asked] : (await queries.scan()).queries).flatMap((q) => q.params.map((p) => p.name)))];
  } catch {
    return undefined;
  }
  // The words past the query's name: commander leaves an unknown flag among them (--name value,
  // --name=value), and the excess arguments are them (name=value). The guess starts at the word it
  // complained of, which must name a parameter, and takes in every other that does.
  const words = named ? command.args.slice(1) : command.args;
  const blamed = flag === undefined ? 0 : words.indexOf(flag + value);
  const meant: string[] = [];
  for (let i = 0; i < words.length; i += 1) {
    const [, dashes, typed, given] = /^(--)?([^=-][^=]*)(?:=(.*))?$/s.exec(words[i] ?? '') ?? [];
    // A word of its own is a parameter only as --name (name=value else).
    const name = typed === undefined || (dashes === undefined && given === undefined) ? undefined : closest(typed, params);
    if (name === undefined) {
      if (i === blamed) return undefined;
      continue;
    }
    let text = given;
    const next = words[i + 1];
    if (text === undefined && next !== undefined && !next.startsWith('-')) {
      text = next;
      i += 1;
    }
    meant.push(`-p ${name}=${text === undefined ? '…' : shellWord(text)}`);
  }
  return meant.length === 0 ? undefined : meant.join(' ');
}

/**
 * The saved queries' names, for a command missing its query (the first few of many), and how many files
 * are broken (a query just written with a typo is not among the names); undefined when there are none
 * or they cannot be read.
 */
async function queryNames(catalog: () => QueryCatalog): Promise<string | undefined> {
  try {
    const { queries, broken } = await catalog().scan();
    const names = queries.map((q) => q.name).sort();
    if (names.length === 0) return undefined;
    const shown = names.length <= QUERY_NAMES_SHOWN ? names.join(', ') : `${names.slice(0, QUERY_NAMES_SHOWN - 1).join(', ')}, … (${names.length} in all)`;
    return broken.length === 0 ? shown : `${shown}; ${plural(broken.length, 'broken file')} left out, savedq check says why`;
  } catch {
    return undefined;
  }
}

/**
 * A value as a POSIX shell reads it back: as it is when it holds only characters no shell treats
 * specially, else in single quotes (Python's shlex.quote). The shell-quote package escapes `:` and `=`
 * too, which every timestamp holds (`2026-11-21T00\:00\:00Z`).
 */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'"'"'`)}'`;
}

import { InputError } from '../errors.js';
import type { Savedq } from '../library.js';
import type { SavedQuery } from '../queries/types.js';
import { SHELLS } from './choices.js';
import type { CommonOptions, Io } from './io.js';

/** An option as completion knows it: its flags, and the values it takes when they are a fixed list. */
export interface OptionShape {
  readonly flags: readonly string[];
  readonly choices?: readonly string[] | undefined;
  /** Whether it takes a value at all. */
  readonly takesValue: boolean;
}

/** A command as completion knows it, taken from the CLI's own definition (cli.ts), so the two cannot drift apart. */
export interface CommandShape {
  readonly name: string;
  readonly description: string;
  readonly options: readonly OptionShape[];
  /** Its arguments in order: a saved query (`query`), a fixed list of values, or anything (files). */
  readonly args: readonly { readonly name: string; readonly choices?: readonly string[] | undefined }[];
  readonly subcommands: readonly CommandShape[];
}

/** The CLI as completion knows it: its commands and the options it takes before them. */
export interface CliShape {
  readonly commands: readonly CommandShape[];
  readonly globalOptions: readonly OptionShape[];
}

/** `name=` for free parameters, `name=value` for each allowed value. */
function paramWords(query: SavedQuery): string[] {
  return query.params.flatMap((p) => (p.allowed ? p.allowed.map((v) => `${p.name}=${v}`) : [`${p.name}=`]));
}

const words = (list: readonly string[]) => list.join(' ');
const flagsOf = (options: readonly OptionShape[]) => options.flatMap((o) => o.flags);

/** The bash lines that complete one command's words after its name. */
function bashCommand(command: CommandShape, queries: readonly SavedQuery[]): string {
  const lines: string[] = [];
  for (const option of command.options.filter((o) => o.choices)) {
    lines.push(`        case "$prev" in ${option.flags.join('|')}) COMPREPLY=( $(compgen -W "${words(option.choices ?? [])}" -- "$cur") ); return ;; esac`);
  }
  const takesQuery = command.args[0]?.name === 'query';
  if (takesQuery && command.options.some((o) => o.flags.includes('--param'))) {
    const cases = queries.map((e) => `            ${e.name}|${e.id}) words="${words(paramWords(e))}" ;;`).join('\n');
    // bash breaks words at '=' (COMP_WORDBREAKS): after `-p interval=` the word is empty and the two
    // before it are the name and '='; the values of that name are offered then.
    const valueCases = queries
      .flatMap((e) => e.params.filter((p) => p.allowed).map((p) => `            ${e.name}:${p.name}|${e.id}:${p.name}) words="${words(p.allowed ?? [])}" ;;`))
      .join('\n');
    lines.push(`        local at=0 name=""
        if [ "$cur" = "=" ]; then at=$((COMP_CWORD-2)); name="$prev"; cur=""; elif [ "$prev" = "=" ]; then at=$((COMP_CWORD-3)); name="\${COMP_WORDS[COMP_CWORD-2]}"; fi
        if [ -n "$name" ] && { [ "\${COMP_WORDS[at]}" = "-p" ] || [ "\${COMP_WORDS[at]}" = "--param" ]; }; then
            words=""
            case "\${COMP_WORDS[2]}:$name" in
${valueCases}
            esac
            COMPREPLY=( $(compgen -W "$words" -- "$cur") )
            return
        fi`);
    lines.push(`        if [ "$prev" = "-p" ] || [ "$prev" = "--param" ]; then
            words=""
            case "\${COMP_WORDS[2]}" in
${cases}
            esac
            COMPREPLY=( $(compgen -W "$words" -- "$cur") )
            type compopt >/dev/null 2>&1 && compopt -o nospace
            return
        fi`);
  }
  const first = takesQuery ? queries.flatMap((e) => [e.name, e.id]) : [...(command.args[0]?.choices ?? []), ...command.subcommands.map((s) => s.name)];
  if (first.length > 0) {
    lines.push(`        if [ "$COMP_CWORD" -eq 2 ] && [ "\${cur#-}" = "$cur" ]; then COMPREPLY=( $(compgen -W "${words(first)}" -- "$cur") ); return; fi`);
  }
  const options = flagsOf(command.options);
  if (command.args.length > 0 && !takesQuery && !command.args.some((a) => a.choices) && command.subcommands.length === 0) {
    lines.push(`        if [ "\${cur#-}" = "$cur" ]; then COMPREPLY=( $(compgen -f -- "$cur") ); return; fi`);
  } else if (command.args.length > 1 && !takesQuery) {
    lines.push(`        if [ "$COMP_CWORD" -gt 2 ] && [ "\${cur#-}" = "$cur" ]; then COMPREPLY=( $(compgen -f -- "$cur") ); return; fi`);
  }
  lines.push(`        COMPREPLY=( $(compgen -W "${words([...options, '--help'])}" -- "$cur") )`);
  return `    ${command.name})\n${lines.join('\n')}\n        ;;`;
}

function bash(cli: CliShape, queries: readonly SavedQuery[]): string {
  return `# savedq completion for bash: eval "$(savedq completion bash)"
_savedq() {
    local cur prev words
    cur="\${COMP_WORDS[COMP_CWORD]}"
    prev="\${COMP_WORDS[COMP_CWORD-1]}"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=( $(compgen -W "${words([...cli.commands.map((c) => c.name), ...flagsOf(cli.globalOptions)])}" -- "$cur") )
        return
    fi
    case "\${COMP_WORDS[1]}" in
${cli.commands.map((c) => bashCommand(c, queries)).join('\n')}
    esac
}
complete -F _savedq savedq
`;
}

function zsh(cli: CliShape, queries: readonly SavedQuery[]): string {
  return `# savedq completion for zsh: eval "$(savedq completion zsh)"
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
${bash(cli, queries).replace(/^# savedq completion for bash.*\n/, '')}`;
}

/** Text inside fish's single quotes. */
const fishQuote = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

function fish(cli: CliShape, queries: readonly SavedQuery[]): string {
  const lines = ['# savedq completion for fish: savedq completion fish | source', 'complete -c savedq -f'];
  for (const command of cli.commands) {
    lines.push(`complete -c savedq -n '__fish_use_subcommand' -a ${command.name} -d ${fishQuote(command.description)}`);
    const when = `-n '__fish_seen_subcommand_from ${command.name}'`;
    if (command.args[0]?.name === 'query') {
      lines.push(`complete -c savedq ${when} -a ${fishQuote(words(queries.flatMap((e) => [e.name, e.id])))}`);
    }
    const fixed = [...(command.args[0]?.choices ?? []), ...command.subcommands.map((s) => s.name)];
    if (fixed.length > 0) lines.push(`complete -c savedq ${when} -a ${fishQuote(words(fixed))}`);
    for (const option of command.options) {
      const short = option.flags.find((f) => /^-[^-]$/.test(f));
      const long = option.flags.find((f) => f.startsWith('--'));
      const parts = [`complete -c savedq ${when}`, short ? `-s ${short.slice(1)}` : '', long ? `-l ${long.slice(2)}` : ''];
      if (option.choices) parts.push(`-x -a ${fishQuote(words(option.choices))}`);
      else if (long === '--param') parts.push(`-x -a ${fishQuote(words([...new Set(queries.flatMap(paramWords))]))}`);
      else if (option.takesValue) parts.push('-r');
      lines.push(parts.filter((p) => p !== '').join(' '));
    }
  }
  return `${lines.join('\n')}\n`;
}

/** `savedq completion <shell>`: prints the script; a broken definition is a warning line. */
export async function completionCommand(lib: Savedq, shell: string, cli: CliShape, _options: CommonOptions, io: Io): Promise<void> {
  const script = completionScript(shell, cli, (await lib.savedQueries()).queries);
  io.stdout.write(script);
}

/** A completion script for the shell, for this CLI and these saved queries. */
export function completionScript(shell: string, cli: CliShape, queries: readonly SavedQuery[]): string {
  switch (shell) {
    case 'bash':
      return bash(cli, queries);
    case 'zsh':
      return zsh(cli, queries);
    case 'fish':
      return fish(cli, queries);
    default:
      throw new InputError(`unknown shell ${JSON.stringify(shell)}: one of ${SHELLS.join(', ')}.`);
  }
}

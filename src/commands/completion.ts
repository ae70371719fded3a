import { InputError } from '../errors.js';
import type { Savedq } from '../library.js';
import type { SavedQuery } from '../queries/types.js';
import { warn, type CommonOptions, type Io } from './io.js';

/** The shells `savedq completion` writes scripts for. */
export const SHELLS = ['bash', 'zsh', 'fish'] as const;

const COMMANDS = ['run', 'list', 'describe', 'check', 'new', 'warm', 'load', 'serve', 'cache', 'schema', 'init', 'completion'];
const TABLES = ['edge_logs', 'function_edge_logs'];

/** `name=` for free parameters, `name=value` for each allowed value. */
function paramWords(endpoint: SavedQuery): string[] {
  return endpoint.params.flatMap((p) => (p.allowed ? p.allowed.map((v) => `${p.name}=${v}`) : [`${p.name}=`]));
}

function bash(endpoints: readonly SavedQuery[]): string {
  const cases = endpoints
    .map((e) => `        ${e.name}|${e.id}) words="${paramWords(e).join(' ')}" ;;`)
    .join('\n');
  return `# savedq completion for bash: eval "$(savedq completion bash)"
_savedq() {
    local cur prev words
    cur="\${COMP_WORDS[COMP_CWORD]}"
    prev="\${COMP_WORDS[COMP_CWORD-1]}"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=( $(compgen -W "${COMMANDS.join(' ')}" -- "$cur") )
        return
    fi
    case "\${COMP_WORDS[1]}" in
    run|warm|describe)
        if [ "$COMP_CWORD" -eq 2 ]; then
            COMPREPLY=( $(compgen -W "${endpoints.flatMap((e) => [e.name, e.id]).join(' ')}" -- "$cur") )
            return
        fi
        if [ "$prev" = "-p" ] || [ "$prev" = "--param" ]; then
            words=""
            case "\${COMP_WORDS[2]}" in
${cases}
            esac
            COMPREPLY=( $(compgen -W "$words" -- "$cur") )
            type compopt >/dev/null 2>&1 && compopt -o nospace
            return
        fi
        if [ "$prev" = "-f" ] || [ "$prev" = "--format" ]; then
            COMPREPLY=( $(compgen -W "table json ndjson csv" -- "$cur") )
            return
        fi
        COMPREPLY=( $(compgen -W "-p --param -f --format --no-cache --refresh --at --help" -- "$cur") )
        ;;
    load)
        if [ "$COMP_CWORD" -eq 2 ]; then
            COMPREPLY=( $(compgen -W "${TABLES.join(' ')} --sample" -- "$cur") )
        else
            COMPREPLY=( $(compgen -f -- "$cur") )
        fi
        ;;
    cache) COMPREPLY=( $(compgen -W "list clear" -- "$cur") ) ;;
    completion) COMPREPLY=( $(compgen -W "${SHELLS.join(' ')}" -- "$cur") ) ;;
    list) COMPREPLY=( $(compgen -W "-f --format" -- "$cur") ) ;;
    schema|init) COMPREPLY=( $(compgen -W "--cluster --url" -- "$cur") ) ;;
    serve) COMPREPLY=( $(compgen -W "--host --port --api-key-file" -- "$cur") ) ;;
    esac
}
complete -F _savedq savedq
`;
}

function zsh(endpoints: readonly SavedQuery[]): string {
  return `# savedq completion for zsh: eval "$(savedq completion zsh)"
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
${bash(endpoints).replace(/^# savedq completion for bash.*\n/, '')}`;
}

function fish(endpoints: readonly SavedQuery[]): string {
  const lines = [
    '# savedq completion for fish: savedq completion fish | source',
    'complete -c savedq -f',
    `complete -c savedq -n '__fish_use_subcommand' -a '${COMMANDS.join(' ')}'`,
    `complete -c savedq -n '__fish_seen_subcommand_from run warm describe' -a '${endpoints.flatMap((e) => [e.name, e.id]).join(' ')}'`,
    `complete -c savedq -n '__fish_seen_subcommand_from run warm' -s p -l param -x -a '${[...new Set(endpoints.flatMap(paramWords))].join(' ')}'`,
    `complete -c savedq -n '__fish_seen_subcommand_from run list cache' -s f -l format -x -a 'table json ndjson csv'`,
    `complete -c savedq -n '__fish_seen_subcommand_from run' -l no-cache -d 'neither read nor write the cache'`,
    `complete -c savedq -n '__fish_seen_subcommand_from run' -l refresh -d 'run and replace the cached result'`,
    `complete -c savedq -n '__fish_seen_subcommand_from load' -a '${TABLES.join(' ')}' -l sample`,
    `complete -c savedq -n '__fish_seen_subcommand_from cache' -a 'list clear'`,
    `complete -c savedq -n '__fish_seen_subcommand_from completion' -a '${SHELLS.join(' ')}'`,
  ];
  return `${lines.join('\n')}\n`;
}

/** `savedq completion <shell>`: prints the script; a broken definition is a warning line. */
export async function completionCommand(lib: Savedq, shell: string, options: CommonOptions, io: Io): Promise<void> {
  const script = completionScript(shell, (await lib.queries.scan()).queries);
  warn(io, options, lib.takeWarnings());
  io.stdout.write(script);
}

/** A completion script for the shell, knowing these saved queries. */
export function completionScript(shell: string, endpoints: readonly SavedQuery[]): string {
  switch (shell) {
    case 'bash':
      return bash(endpoints);
    case 'zsh':
      return zsh(endpoints);
    case 'fish':
      return fish(endpoints);
    default:
      throw new InputError(`unknown shell ${JSON.stringify(shell)}: one of ${SHELLS.join(', ')}.`);
  }
}

import { Option, type Command } from 'commander';
import { settingHelp, SETTINGS, type Setting } from '../config.js';
import { FORMATS } from '../output/index.js';

/** A repeatable option's values. It has no default (an absent one is undefined), so its help shows none. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** Adds settings' options to a command, in this order, as the one table of settings says them. */
export function withSettings(command: Command, ...names: (keyof typeof SETTINGS)[]): Command {
  for (const name of names) {
    const setting: Setting = SETTINGS[name];
    if (setting.repeatable) command.option(setting.flag, settingHelp(setting), collect);
    else command.option(setting.flag, settingHelp(setting));
  }
  return command;
}

/** -f/--format, as list and cache list take it (and run, with a chart besides). */
export function formatOption(choices: readonly string[] = FORMATS): Option {
  return new Option('-f, --format <format>', 'output format (default: table on a terminal, else json)').choices(choices);
}

/**
 * An "Examples:" section for a command's help, at the help's width (the terminal's, else 80): an
 * example longer than that is broken between its words with ` \`, as a shell reads one line.
 */
export function examples(...lines: string[]): (context: { error: boolean; command: Command }) => string {
  return ({ error, command }) => {
    const output = command.configureOutput();
    const width = (error ? output.getErrHelpWidth?.() : output.getOutHelpWidth?.()) ?? 80;
    return `\nExamples:\n${lines.map((l) => continued(`  $ ${l}`, width)).join('\n')}\n`;
  };
}

/**
 * A command line broken with ` \` between words so no line passes `width`: never inside quotes, nor
 * between an option and its value (`-p name=value` stays whole); a comment is left whole.
 */
function continued(line: string, width: number): string {
  if (line.length <= width || line.startsWith('  $ #')) return line;
  const words = line.slice(4).match(/(?:-\S+ (?=[^-|\s]))?(?:'[^']*'|"[^"]*"|[^\s'"]+)+/g) ?? [];
  const lines: string[] = [];
  let [current, started] = ['  $', false];
  for (const word of words) {
    if (started && current.length + 1 + word.length + 2 > width) {
      lines.push(`${current} \\`);
      current = '     ';
    }
    [current, started] = [`${current} ${word}`, true];
  }
  return [...lines, current].join('\n');
}

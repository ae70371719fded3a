import { sunsetText, versionRef } from '../queries/version-ref.js';
import { Chalk } from 'chalk';
import stringWidth from 'string-width';
import { boundsText, clickhouseType } from '../queries/param-types.js';
import type { SavedQuery } from '../queries/types.js';
import { wrapped } from './wrap.js';

/**
 * A saved query for a reader: its name and id, where it comes from (`from`, as the reader may see
 * it), its parameters, fields, limits and cache, and its SQL. What `describe` prints, and an MCP
 * resource's text. With a `width` (a terminal's), its prose is wrapped at word breaks to fit, each
 * piece's lines under its first word, and so are the SQL's comments; its code is left as it is written.
 */
export function describeText(q: SavedQuery, options: { readonly color: boolean; readonly from: string; readonly width?: number }): string {
  const c = new Chalk({ level: options.color ? 1 : 0 });
  const fit = (text: string, indent: number, hanging = indent): string => wrapped(text, indent, hanging, options.width);
  const params = q.params.map((p) => {
    const facts = [
      p.required ? 'required' : 'optional',
      p.allowed ? `${p.other === 'reject' ? 'one of' : 'usually'} ${p.allowed.join(', ')}` : '',
      boundsText(p),
      p.default !== undefined ? `default ${p.default}` : '',
    ].filter((f) => f !== '');
    const type = `${p.type}, bound as ${clickhouseType(p)}`;
    return `${fit(`${c.bold(p.name)}  (${facts.join('; ')})  ${c.dim(type)}`, 2, 4)}${p.description ? `\n${fit(p.description, 6)}` : ''}`;
  });
  const fields = q.fields.map((f) => fit(`${c.bold(f.name)}  ${f.type}${f.description ? `: ${f.description}` : ''}`, 2, 4));
  return [
    `${c.bold(q.name)}  ${c.dim(q.id)}`,
    ...(q.description ? [fit(q.description, 0)] : []),
    `From: ${options.from}${q.builtin ? ' (built-in)' : ''}`,
    // Said of a query that has versions: which this is, and an older one's sunset.
    ...(q.version > 1 || q.kept === true ? [fit(`Version: ${q.version}${q.kept === true ? `, an older one kept callable as ${versionRef(q)}` : ''}${q.sunsetMs !== undefined ? `; answers until ${sunsetText(q.sunsetMs)} (sunset)` : ''}`, 0, 2)] : []),
    '',
    'Parameters:',
    ...(params.length > 0 ? params : ['  none']),
    '',
    'Row fields:',
    ...(fields.length > 0 ? fields : ['  not declared']),
    '',
    `Max rows: ${q.maxRows}`,
    `Cache: ${q.cacheSeconds > 0 ? `${q.cacheSeconds} s${q.warmSeconds > 0 ? `, warmed when ${q.warmSeconds} s old` : ', not warmed'}` : 'not cached'}`,
    fit(`Sandbox: ${q.sandbox ? 'yes: callers may send their own SELECT over the answer, which it reads as the table result (run --sql, ?sql=)' : 'no: callers send parameters only'}`, 0, 2),
    '',
    'SQL:',
    sqlText(q.sql, options.width),
    '',
  ].join('\n');
}

/**
 * A query's SQL for a reader: as written, but for a run of comment lines (`-- …`, one indent) with a
 * line longer than `width`, which is wrapped again at word breaks as one paragraph. Code is never rewrapped.
 */
function sqlText(sql: string, width: number | undefined): string {
  if (width === undefined) return sql;
  const out: string[] = [];
  let run: { lead: string; lines: string[] } | undefined;
  const flush = () => {
    if (!run) return;
    const { lead, lines } = run;
    if (lines.some((l) => stringWidth(`${lead}${l}`) > width)) {
      out.push(...wrapped(lines.join(' '), 0, 0, width - stringWidth(lead)).split('\n').map((part) => `${lead}${part}`));
    } else out.push(...lines.map((l) => `${lead}${l}`));
    run = undefined;
  };
  for (const line of sql.split('\n')) {
    const comment = /^(\s*--\s?)(.*)$/.exec(line);
    if (comment && run && run.lead === comment[1]) run.lines.push(comment[2] as string);
    else {
      flush();
      if (comment) run = { lead: comment[1] as string, lines: [comment[2] as string] };
      else out.push(line);
    }
  }
  flush();
  return out.join('\n');
}

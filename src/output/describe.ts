import { Chalk } from 'chalk';
import { boundsText, clickhouseType } from '../queries/param-types.js';
import type { SavedQuery } from '../queries/types.js';
import { wrapped } from './wrap.js';

/**
 * A saved query for a reader: its name and id, where it comes from (`from`, as the reader may see
 * it), its parameters, fields, limits and cache, and its SQL. What `describe` prints, and an MCP
 * resource's text. With a `width` (a terminal's), its prose is wrapped at word breaks to fit, each
 * piece's lines under its first word; the SQL is left as it is written.
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
    '',
    'Parameters:',
    ...(params.length > 0 ? params : ['  none']),
    '',
    'Row fields:',
    ...(fields.length > 0 ? fields : ['  not declared']),
    '',
    `Max rows: ${q.maxRows}`,
    `Cache: ${q.cacheSeconds > 0 ? `${q.cacheSeconds} s${q.warmSeconds > 0 ? `, warmed when ${q.warmSeconds} s old` : ', not warmed'}` : 'not cached'}`,
    fit(`Sandbox: ${q.sandbox === true ? 'yes: callers may send their own SELECT over the answer, which it reads as the table result (run --sql, ?sql=)' : 'no: callers send parameters only'}`, 0, 2),
    '',
    'SQL:',
    q.sql,
    '',
  ].join('\n');
}

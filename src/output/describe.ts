import { Chalk } from 'chalk';
import { boundsText, clickhouseType } from '../queries/param-types.js';
import type { SavedQuery } from '../queries/types.js';

/**
 * A saved query for a reader: its name and id, where it comes from (`from`, as the reader may see
 * it), its parameters, fields, limits and cache, and its SQL. What `describe` prints, and an MCP
 * resource's text.
 */
export function describeText(q: SavedQuery, options: { readonly color: boolean; readonly from: string }): string {
  const c = new Chalk({ level: options.color ? 1 : 0 });
  const params = q.params.map((p) => {
    const facts = [
      p.required ? 'required' : 'optional',
      p.allowed ? `${p.other === 'reject' ? 'one of' : 'usually'} ${p.allowed.join(', ')}` : '',
      boundsText(p),
      p.default !== undefined ? `default ${p.default}` : '',
    ].filter((f) => f !== '');
    const type = `${p.type}, bound as ${clickhouseType(p)}`;
    return `  ${c.bold(p.name)}  (${facts.join('; ')})  ${c.dim(type)}${p.description ? `\n      ${p.description}` : ''}`;
  });
  const fields = q.fields.map((f) => `  ${c.bold(f.name)}  ${f.type}${f.description ? `: ${f.description}` : ''}`);
  return [
    `${c.bold(q.name)}  ${c.dim(q.id)}`,
    ...(q.description ? [q.description] : []),
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
    `Sandbox: ${q.sandbox === true ? "yes: callers may send their own SELECT over the answer, which it reads as the table result (run --sql, ?sql=)" : 'no: callers send parameters only'}`,
    '',
    'SQL:',
    q.sql,
    '',
  ].join('\n');
}

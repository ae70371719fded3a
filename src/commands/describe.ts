import { Chalk } from 'chalk';
import type { Savedq } from '../library.js';
import { displayPath } from '../queries/catalog.js';
import { boundsText, clickhouseType } from '../queries/param-types.js';
import { colorOf, type CommonOptions, type Io } from './io.js';

/** `savedq describe <name|id>`: where a saved query comes from, its parameters, fields, cache and SQL. */
export async function describeCommand(lib: Savedq, nameOrId: string, options: CommonOptions, io: Io): Promise<void> {
  // Every definition is read, so a broken one is reported (describe is not on anyone's hot path).
  await lib.savedQueries();
  const q = await lib.queries.find(nameOrId);
  const c = new Chalk({ level: colorOf(io, options) ? 1 : 0 });
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
  io.stdout.write(
    [
      `${c.bold(q.name)}  ${c.dim(q.id)}`,
      ...(q.description ? [q.description] : []),
      `From: ${displayPath(q.file)}${q.builtin ? ' (built-in)' : ''}`,
      '',
      'Parameters:',
      ...(params.length > 0 ? params : ['  none']),
      '',
      'Row fields:',
      ...(fields.length > 0 ? fields : ['  not declared']),
      '',
      `Max rows: ${q.maxRows}`,
      `Cache: ${q.cacheSeconds > 0 ? `${q.cacheSeconds} s${q.warmSeconds > 0 ? `, warmed when ${q.warmSeconds} s old` : ', not warmed'}` : 'not cached'}`,
      '',
      'SQL:',
      q.sql,
      '',
    ].join('\n'),
  );
}

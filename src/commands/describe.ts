import { Chalk } from 'chalk';
import { findEndpoint } from '../endpoints/registry.js';
import { readSqlFile } from '../endpoints/sql.js';
import { useColor } from '../output/index.js';
import type { CommonOptions, Io } from './io.js';

/** `savedq describe <name|id>`: purpose, parameters, cache settings and the SQL of one endpoint. */
export function describeCommand(nameOrId: string, options: CommonOptions, io: Io): void {
  const e = findEndpoint(nameOrId);
  const c = new Chalk({ level: useColor(options.color, io.stdout.isTTY === true, io.env) ? 1 : 0 });
  const params = e.params.map((p) => {
    const facts = [
      p.required ? 'required' : 'optional',
      p.allowed ? `${p.otherValues === 'reject' ? 'one of' : 'usually'} ${p.allowed.join(', ')}` : '',
      p.default !== undefined ? `default ${p.default}` : '',
    ].filter((f) => f !== '');
    return `  ${c.bold(p.name)}  (${facts.join('; ')})\n      ${p.description}`;
  });
  const fields = e.fields.map((f) => `  ${c.bold(f.name)}  ${f.type}: ${f.description}`);
  io.stdout.write(
    [
      `${c.bold(e.name)}  ${c.dim(e.id)}`,
      e.description,
      '',
      'Parameters:',
      ...params,
      '',
      'Row fields:',
      ...fields,
      '',
      `Max rows: ${e.maxRows}`,
      `Cache: ${e.cacheSeconds > 0 ? `${e.cacheSeconds} s, warmed when ${e.warmSeconds} s old` : 'not cached'}`,
      '',
      `SQL (sql/${e.name}.sql):`,
      readSqlFile(`${e.name}.sql`).trimEnd(),
      '',
    ].join('\n'),
  );
}

import { quoteText } from './client.js';
import type { LinesFormat } from './types.js';

/**
 * Where an insert (the parts, in parallel) or a query (the whole, in order) reads lines staged on the
 * embedded engine: the files' names are bound as parameters when the statement runs (embedded.ts).
 */
export function stagedSource(use: 'insert' | 'query', format: LinesFormat, structure: string): string {
  return `file({${use === 'insert' ? 'staged_parts' : 'staged_file'}:String}, '${format}', ${quoteText(structure)})`;
}

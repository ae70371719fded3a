import { ForbiddenError } from '../errors.js';
import type { RawParams } from '../queries/params.js';
import type { SavedQuery } from '../queries/types.js';
import type { Scope } from './tokens.js';

/** A scope's query as a pattern: a name, an id, or a glob (`*` any run of characters, `?` one). */
function matcher(pattern: string): (text: string) => boolean {
  if (!/[*?]/.test(pattern)) return (text) => text === pattern;
  const re = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
  return (text) => re.test(text);
}

/**
 * The first of a token's scopes that opens a query (by its name or its id: every version; by `name@N`
 * or `id@N`: that version), if any.
 */
export function scopeOf(scopes: readonly Scope[], query: Pick<SavedQuery, 'name' | 'id' | 'version'>): Scope | undefined {
  return scopes.find((s) => {
    const matches = matcher(s.query);
    return matches(query.name) || matches(query.id) || matches(`${query.name}@${query.version}`) || matches(`${query.id}@${query.version}`);
  });
}

/**
 * The raw parameters of a call with a scope's fixed parameters applied: a fixed value is always the
 * token's. Absent from the request, it is added; given with the same text, kept; given with another,
 * a ForbiddenError naming the parameter. The values then go through the same checks as any value.
 */
export function withFixed(params: RawParams, fixed: ReadonlyMap<string, string>): RawParams {
  for (const [name, value] of params) {
    const pinned = fixed.get(name);
    if (pinned !== undefined && value !== pinned) throw new ForbiddenError(`parameter '${name}' is fixed by the token; it cannot be ${JSON.stringify(value.length > 40 ? `${value.slice(0, 37)}...` : value)}.`);
  }
  const given = new Set(params.map(([name]) => name));
  return [...params, ...[...fixed].filter(([name]) => !given.has(name))];
}

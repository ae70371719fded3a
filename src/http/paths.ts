/** Where serve answers a saved query: `<prefix><name or id>`; said once, for the server and for its page. */
export const QUERY_PREFIX = '/api/endpoints/query/';

/** A request's target as the server reads it: its path, and its query string (after the first `?`, '' for none). */
export function splitTarget(rawUrl: string): { readonly path: string; readonly search: string } {
  const q = rawUrl.indexOf('?');
  return q < 0 ? { path: rawUrl, search: '' } : { path: rawUrl.slice(0, q), search: rawUrl.slice(q + 1) };
}

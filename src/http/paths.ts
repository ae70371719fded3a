/** Where serve answers a saved query: `<prefix><name or id>`; said once, for the server and for its page. */
export const QUERY_PREFIX = '/api/endpoints/query/';
/** Where a saved query's whole answer is exported (CONTRACT §19). */
export const EXPORT_PREFIX = '/api/endpoints/export/';

/** A request's target as the server reads it: its path, and its query string (after the first `?`, '' for none). */
export function splitTarget(rawUrl: string): { readonly path: string; readonly search: string } {
  const q = rawUrl.indexOf('?');
  return q < 0 ? { path: rawUrl, search: '' } : { path: rawUrl.slice(0, q), search: rawUrl.slice(q + 1) };
}

/** A call's address, as a caller's prepared calls are found by it: its path and query string (`path?search`). */
export function addressOf(path: string, search: string): string {
  return `${path}?${search}`;
}

/** The address of a request's target as it came (addressOf of its splitTarget), made without splitting it. */
export function addressOfTarget(rawUrl: string): string {
  return rawUrl.includes('?') ? rawUrl : `${rawUrl}?`;
}

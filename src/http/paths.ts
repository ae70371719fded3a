/** Where serve answers a saved query: `<prefix><name or id>`; said once, for the server and for its page. */
export const QUERY_PREFIX = '/api/endpoints/query/';

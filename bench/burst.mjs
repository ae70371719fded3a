// A burst of distinct requests at once, sent by autocannon (a load generator of its own process, not the
// bench's event loop): `count` connections, one request each, the i-th's path with `{i}` replaced by
// `first + i`, so that each is a call of its own (a cache miss). Prints autocannon's JSON report; the
// latency's max is when the last was answered.
//
//   node bench/burst.mjs <url with {i}> <count> <first> [header=value …]
import autocannon from 'autocannon';

const [template, count, first, ...headerArgs] = process.argv.slice(2);
const url = new URL(template.replace('{i}', '0'));
const headers = Object.fromEntries(headerArgs.map((h) => [h.slice(0, h.indexOf('=')), h.slice(h.indexOf('=') + 1)]));
let next = Number(first);
const result = await autocannon({
  url: url.origin,
  connections: Number(count),
  amount: Number(count),
  headers,
  requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, path: template.slice(url.origin.length).replace('{i}', String(next++)) }) }],
});
process.stdout.write(JSON.stringify({ non2xx: result.non2xx, errors: result.errors, latency: result.latency, requests: result.requests.total }));

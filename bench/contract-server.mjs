// bare-server.mjs plus what the contract has every server print and send for a cached answer, written
// plainly: X-Cache, Age and X-Request-Id (a prefix and a count) on the answer, and one access-log line
// a request on standard error (docs/serve.md, "Operators"), gathered and written every 100 ms as savedq
// writes its log to a file. No credential checked, no cache looked up, no metric counted: the floor
// of the contract's own cost, against which savedq's is what savedq decides and keeps.
import { createServer } from 'node:http';
import { write } from 'node:fs';

const body = process.argv[2] ?? '{}';
const length = String(Buffer.byteLength(body));
let count = 0;
let lines = [];
let timer;
let stamp = { ms: NaN, text: '' };
const flush = () => {
  timer = undefined;
  const text = lines.join('');
  lines = [];
  write(2, text, () => {});
};
const server = createServer((req, res) => {
  const started = performance.now();
  const id = ['0f3a9c2e-1b4d-', (count += 1).toString(36)].join('');
  res.writeHead(200, ['Content-Type', 'application/json; charset=utf-8', 'Content-Length', length, 'X-Cache', 'HIT', 'Age', '1', 'X-Request-Id', id]);
  res.end(body);
  const now = Date.now();
  if (now !== stamp.ms) stamp = { ms: now, text: new Date(now).toISOString() };
  const caller = req.headers['x-api-key'] !== undefined || req.headers.authorization !== undefined ? '"key 1"' : '-';
  lines.push(`${stamp.text} ${req.method} usage.api-counts 200 ${Math.round(performance.now() - started)}ms cache=HIT caller=${caller} id=${id}\n`);
  timer ??= setTimeout(flush, 100);
});
server.listen(0, '127.0.0.1', () => process.stderr.write(`listening on http://127.0.0.1:${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));

import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { keepTickShape } from '../../src/http/tick-shape.js';

// serve keeps one of Node's nextTick records so that V8's memory-reducing collections keep the hidden
// classes every such record is built through (src/http/tick-shape.ts, docs/performance.md).
const built = fileURLToPath(new URL('../../dist/http/tick-shape.js', import.meta.url));

describe('the nextTick record serve keeps', () => {
  it('is one record, kept: a second call gives the same object', async () => {
    const first = await keepTickShape();
    expect(Reflect.ownKeys(first).map(String)).toContain('callback');
    expect(await keepTickShape()).toBe(first);
  });

  it("shares its hidden class with Node's nextTick records made after a memory-reducing collection", () => {
    // V8's own test hooks, in a process of their own: gc() with the flavour that reduces memory, and
    // %HaveSameMap, which tells whether two objects have the same hidden class.
    const script = `
      import { executionAsyncResource } from 'node:async_hooks';
      import { keepTickShape } from ${JSON.stringify(built)};
      const kept = await keepTickShape();
      await new Promise((resolve) => setTimeout(resolve, 0));
      gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
      const fresh = await new Promise((resolve) => process.nextTick(() => resolve(executionAsyncResource())));
      process.stdout.write(JSON.stringify({ same: fresh !== kept && %HaveSameMap(kept, fresh), plain: %HaveSameMap(kept, { callback: 1 }) }));`;
    const out = execFileSync(process.execPath, ['--expose-gc', '--allow-natives-syntax', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ same: true, plain: false });
  });
});

import { missingNeeds } from './system.js';

/**
 * Names, once a run, each program that some tests need and this machine lacks (those tests skip); under
 * SAVEDQ_TEST_ALL=1, as CI runs, a missing one fails the run before any test.
 */
export default function setup(): void {
  const missing = missingNeeds();
  if (missing.length === 0) return;
  if (process.env.SAVEDQ_TEST_ALL === '1') {
    throw new Error(`SAVEDQ_TEST_ALL=1, and this machine lacks:\n${missing.map((m) => `  ${m}`).join('\n')}`);
  }
  for (const m of missing) process.stderr.write(`skipping the tests that need ${m}\n`);
}

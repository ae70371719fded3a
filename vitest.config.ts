import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Names each program some tests need and the machine lacks (SAVEDQ_TEST_ALL=1 makes that a failure).
    globalSetup: ['test/global-setup.ts'],
    // A test's bound, as test/helpers.ts's EVENT_DEADLINE_MS (a test waiting for more says LONG_TEST_MS).
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Every spy is put back before the next test, whether or not the test that made it reached its end.
    restoreMocks: true,
    // Each test file opens its own embedded engine; the engine binds one data directory per process,
    // so files run in separate processes (forks), two at a time on this two-core machine.
    pool: 'forks',
    maxWorkers: 2,
  },
});

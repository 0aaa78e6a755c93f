import { defineConfig } from 'vitest/config'
import { timeScale } from './test/support/time.js'

/**
 * Two tiers. The default (`npm test`) runs every unit test, the adapter behaviour suite, the
 * store conformance suites on every store and a short scenario of each fault. `TEST_TIER=all`
 * (`npm run test:all`, and any run given file filters) adds the files below: the long fault
 * scenarios, races of many instances, the soak, the browser tests and the benchmark smoke run.
 */
export const LONG_FILES = [
  'test/faults/faults.test.ts',
  'test/multi-instance/many-instances.test.ts',
  'test/reliability/soak.test.ts',
  'test/console/browser.test.ts',
  'test/docs/site.test.ts',
  'bench/test/smoke.test.ts',
]

const all = process.env.TEST_TIER === 'all'
// Deadlines stretch with TEST_TIME_SCALE (npm run test:stress sets it); see test/support/time.ts.
const scale = timeScale(process.env.TEST_TIME_SCALE)

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'examples/*/test/**/*.test.ts', 'bench/test/**/*.test.ts'],
    exclude: ['**/node_modules/**', ...(all ? [] : LONG_FILES)],
    testTimeout: 30_000 * scale,
    hookTimeout: 60_000 * scale,
    // One PostgreSQL and one Redis for the run; files that only need a database share them.
    globalSetup: ['test/services/global-setup.ts'],
    pool: 'forks',
    // Files run in parallel: most of the suite waits on child processes, servers, leases and
    // disk syncs rather than on the CPU, so four at a time fill two cores. Every file uses its
    // own ports (0), temporary folders and database names.
    maxWorkers: 4,
    reporters: ['default'],
  },
})

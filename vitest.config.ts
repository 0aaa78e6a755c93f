import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'
import { timeScale } from './test/support/time.js'

/**
 * Two tiers. The default (`npm test`) runs every unit test, the adapter behaviour suite, the
 * store conformance suites on every store and a short scenario of each fault. `TEST_TIER=all`
 * (`npm run test:all`, and any run given file filters) adds the files below: the long fault
 * scenarios, races of many instances, the soak, the browser tests, the PostgreSQL store through
 * PgBouncer, the benchmark smoke run, and
 * the release checks (the packed tarballs installed into a fresh app, the API reports).
 */
export const LONG_FILES = [
  'test/faults/faults.test.ts',
  'test/multi-instance/many-instances.test.ts',
  'test/reliability/soak.test.ts',
  'test/console/browser.test.ts',
  'test/store/pgbouncer.test.ts',
  'test/docs/site.test.ts',
  'bench/test/smoke.test.ts',
  'test/pack/pack.test.ts',
  'test/release/api-reports.test.ts',
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
    // TEST_CPU_REPORT=<file>: the CPU each test file used, one JSON line each (test/support/cpu-report.ts).
    setupFiles: process.env.TEST_CPU_REPORT ? ['test/support/cpu-report.ts'] : [],
    pool: 'forks',
    // Files run in parallel: most of the suite waits on child processes, servers, leases and
    // disk syncs rather than on the CPU, so three files a core fill the cores (six on two cores:
    // 0.86× the wall time of four, for 1.04× the CPU, measured 2026-11-27). Every file uses its own
    // ports (0), temporary folders and database names.
    maxWorkers: Math.min(8, Math.max(2, availableParallelism() * 3)),
    reporters: ['default'],
  },
})

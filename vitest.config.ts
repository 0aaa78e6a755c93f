import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'examples/*/test/**/*.test.ts', 'bench/test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Files run in parallel: most of the suite waits on child processes, servers, leases and
    // disk syncs rather than on the CPU, so four at a time fill two cores. Every file uses its
    // own ports (0), temporary folders and database names.
    maxWorkers: 4,
    reporters: ['default'],
  },
})

// Vitest config of the soak (npm run soak): only test/faults/soak.ts, no timeout (the test sets
// its own length from FAULTS_SOAK_MINUTES). npm test does not run it.
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/faults/soak.ts'],
    pool: 'forks',
    testTimeout: 0,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
})

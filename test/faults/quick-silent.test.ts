/**
 * One short scenario of each fault (`npm test`): PostgreSQL and Redis going silent, a restart that leaves pooled connections dead, completes that hang, with less traffic and shorter faults than
 * test/faults/faults.test.ts runs them (`npm run test:all`). Files of quick scenarios run beside the
 * others: they check every event is handled once, not the figures (which need a machine to themselves).
 */
import { afterAll } from 'vitest'
import { printTable } from './figures.js'
import { useServers } from './services.js'
import { silentStoreScenarios } from './silent-stores.js'

useServers()
silentStoreScenarios('quick')
afterAll(() => printTable('Faults, quick (silent)'))

/**
 * One short scenario of each fault (`npm test`): PostgreSQL stopped and Redis restarted or killed -9 under the faithful sender, with less traffic and shorter faults than
 * test/faults/faults.test.ts runs them (`npm run test:all`). Files of quick scenarios run beside the
 * others: they check every event is handled once, not the figures (which need a machine to themselves).
 */
import { afterAll } from 'vitest'
import { printTable } from './figures.js'
import { useServers } from './services.js'
import { sharedStoreScenarios } from './shared-stores.js'

useServers()
sharedStoreScenarios('quick')
afterAll(() => printTable('Faults, quick (stores)'))

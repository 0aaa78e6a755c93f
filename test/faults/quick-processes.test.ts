/**
 * One short scenario of each fault (`npm test`): the SQLite disk full or slow, receivers and inbox workers killed -9 in a loop, with less traffic and shorter faults than
 * test/faults/faults.test.ts runs them (`npm run test:all`). Files of quick scenarios run beside the
 * others: they check every event is handled once, not the figures (which need a machine to themselves).
 */
import { afterAll } from 'vitest'
import { printTable } from './figures.js'
import { killLoopScenarios } from './kill-loop.js'
import { useServers } from './services.js'
import { sqliteDiskScenarios } from './sqlite-disk.js'

useServers()
sqliteDiskScenarios('quick')
killLoopScenarios('quick')
afterAll(() => printTable('Faults, quick (processes)'))

/**
 * Faults survived, end to end (issue 29): every scenario drives the testing kit's faithful sender
 * (10 attempts with backoff, compressed in time; a 10 s timeout; the endpoint disabled after 10
 * failures in a row) against receiver processes on the real adapters and stores, breaks
 * something mid-traffic, recovers the endpoint the documented way where the sender disabled it,
 * and measures from outside: events emitted, handled once, twice, lost, 2xx without a record,
 * p99 answer time. Figures and method: docs/reliability.md.
 *
 * One file, so the scenarios run one after another: each one loads the machine (receivers,
 * servers, strace), and two at once on two cores measure each other. One scenario alone:
 * `npm test -- test/faults -t "killed -9"`. Longer faults and more traffic: `npm run chaos`.
 */
import { afterAll } from 'vitest'
import { clockJumpScenarios } from './clock-jump.js'
import { disabledScenarios } from './disabled.js'
import { printTable } from './figures.js'
import { killLoopScenarios } from './kill-loop.js'
import { FULL_LEVEL } from './level.js'
import { useServers } from './services.js'
import { sharedStoreScenarios } from './shared-stores.js'
import { silentStoreScenarios } from './silent-stores.js'
import { slowHandlerScenarios } from './slow-handler.js'
import { sqliteDiskScenarios } from './sqlite-disk.js'

useServers()
sharedStoreScenarios(FULL_LEVEL)
sqliteDiskScenarios(FULL_LEVEL)
killLoopScenarios(FULL_LEVEL)
slowHandlerScenarios(FULL_LEVEL)
clockJumpScenarios(FULL_LEVEL)
disabledScenarios(FULL_LEVEL)
silentStoreScenarios(FULL_LEVEL)
afterAll(() => printTable('Faults survived, end to end (the faithful sender against real adapters and stores)'))

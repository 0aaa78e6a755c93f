/**
 * One short scenario of each fault (`npm test`): slow handlers, the receiver's clock off by 10 minutes, an endpoint disabled by 5xx, with less traffic and shorter faults than
 * test/faults/faults.test.ts runs them (`npm run test:all`). Files of quick scenarios run beside the
 * others: they check every event is handled once, not the figures (which need a machine to themselves).
 */
import { afterAll } from 'vitest'
import { clockJumpScenarios } from './clock-jump.js'
import { disabledScenarios } from './disabled.js'
import { printTable } from './figures.js'
import { slowHandlerScenarios } from './slow-handler.js'

slowHandlerScenarios('quick')
clockJumpScenarios('quick')
disabledScenarios('quick')
afterAll(() => printTable('Faults, quick (handlers)'))

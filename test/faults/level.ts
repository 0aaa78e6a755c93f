/**
 * How long and how big a fault scenario runs. `quick`: one short scenario of each fault, in
 * `npm test` (the test/faults/quick-*.test.ts files, run beside the other files); `full`: every
 * scenario and variant, one file at a time (test/faults/faults.test.ts, in `npm run test:all`);
 * `long`: longer faults and more traffic (`npm run chaos`, FAULTS_LONG=1).
 */
import { LONG } from './figures.js'

export type FaultLevel = 'quick' | 'full' | 'long'

/** The value of `values` for `level`. */
export function pick<T>(level: FaultLevel, values: Record<FaultLevel, T>): T {
  return values[level]
}

/** The level of faults.test.ts: long with FAULTS_LONG=1, else full. */
export const FULL_LEVEL: FaultLevel = LONG ? 'long' : 'full'

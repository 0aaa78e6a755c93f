/** The shapes a load run shares with its summary: its options and what it counts. */
import type { Expectation } from './expect.js'

/** Settings of a load run. */
export interface LoadOptions {
  count: number
  concurrency: number
  /** Percent (0–100) of requests that repeat an earlier webhook-id. */
  duplicatePercent: number
  durationSeconds: number
  timeoutMs: number
  type: string
  /** When false, events cycle through every email event type. */
  typeGiven: boolean
  /** data.id of every event (one email); default a fresh one per event. */
  emailId?: string
  /** `created_at` of every generated event (an ISO date-time); default the time it is generated. */
  createdAt?: string
  expect?: Expectation
}

/** Running tallies of a load. */
export interface Tally {
  answered: number[]
  latencies: number[]
  conflicts: number
  noAnswer: number
  wrong: number
  duplicatesSent: number
  /** Answers in 2xx so far (kept for the progress bar). */
  successes: number
}

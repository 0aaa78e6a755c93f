/** The receiver's metric instruments, made on one meter (again when the app registers another meter provider). */
import { METRIC } from './names.js'
import type { Counter, Histogram, Meter } from './otel.js'

export interface Instruments {
  meter: Meter
  deliveries: Counter
  handlerDuration: Histogram
  storeDuration: Histogram
  handlersActive: Counter
  inboxProcessed: Counter
}

/** Bucket bounds in seconds: a store step takes ~0.1–50 ms, a handler ms to minutes. */
const STORE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
const HANDLER_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 7.5, 10, 30, 60, 300]

export function createInstruments(meter: Meter): Instruments {
  return {
    meter,
    deliveries: meter.createCounter(METRIC.deliveries, {
      description: 'Webhook deliveries received, by outcome, reason (error code) and event type.',
      unit: '{delivery}',
    }),
    handlerDuration: meter.createHistogram(METRIC.handlerDuration, {
      description: 'How long the handlers of an event ran, by event type and result.',
      unit: 's',
      advice: { explicitBucketBoundaries: HANDLER_BUCKETS },
    }),
    storeDuration: meter.createHistogram(METRIC.storeDuration, {
      description: 'How long a dedup store step (claim, complete, release, enqueue) took, by step and store.',
      unit: 's',
      advice: { explicitBucketBoundaries: STORE_BUCKETS },
    }),
    handlersActive: meter.createUpDownCounter(METRIC.handlersActive, {
      description: 'Handlers running right now.',
      unit: '{handler}',
    }),
    inboxProcessed: meter.createCounter(METRIC.inboxProcessed, {
      description: 'Inbox entries the worker took, by what came of them (handled, duplicate, retry, dead, deferred).',
      unit: '{entry}',
    }),
  }
}

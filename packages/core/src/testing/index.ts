/**
 * @email-webhooks/core/testing: signed fixtures, a controllable clock and the dedup-store
 * conformance suite, so users can unit-test their handlers and their own stores.
 */
export { createTestClock, type TestClock } from './clock.js'
export { type ConformanceRunner, type DedupStoreConformanceOptions, dedupStoreConformance } from './conformance.js'
export {
  type CreateSignedDeliveryInput,
  createEvent,
  createFixtureDeliveries,
  createSignedDelivery,
  eventFixtures,
  FIXTURE_TIMESTAMP,
  type FixtureDeliveriesOptions,
  type FixtureDelivery,
  type FixtureExpectation,
  type SignedDelivery,
  TEST_SECRET,
  UNKNOWN_EVENT_TYPE,
  unknownEventFixture,
} from './fixtures.js'
export { type OrderingConformanceOptions, orderingConformance } from './ordering-conformance.js'
export {
  type CreateEmailSequenceInput,
  createEmailSequence,
  delayedOne,
  type EmailSequence,
  type EmailSequenceStep,
  MAX_PERMUTATION_ITEMS,
  permutations,
  reversed,
  shuffled,
} from './sequences.js'

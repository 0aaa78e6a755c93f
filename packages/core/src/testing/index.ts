/**
 * @email-webhooks/core/testing: signed fixtures, a controllable clock and the dedup-store
 * conformance suite, so users can unit-test their handlers and their own stores; Lambda events for
 * a delivery; the faithful sender.
 */

// checkEndpointUrl is the service's rule and lives with the API client; still exported here, where it was first.
export { checkEndpointUrl, type EndpointUrlProblem } from '../api/urls.js'
export { createTestClock, type TestClock } from './clock.js'
export { type ConformanceRunner, type DedupStoreConformanceOptions, dedupStoreConformance } from './conformance.js'
export {
  createFixtureDeliveries,
  type FixtureDeliveriesOptions,
  type FixtureDelivery,
  type FixtureExpectation,
} from './fixture-deliveries.js'
export {
  type CreateSignedDeliveryInput,
  createEvent,
  createSignedDelivery,
  eventFixtures,
  FIXTURE_TIMESTAMP,
  type SignedDelivery,
  TEST_SECRET,
  UNKNOWN_EVENT_TYPE,
  unknownEventFixture,
} from './fixtures.js'
export { type InboxConformanceOptions, inboxConformance } from './inbox-conformance.js'
export {
  type CreateLambdaEventOptions,
  createLambdaContext,
  createLambdaEvent,
  type LambdaAlbEvent,
  type LambdaDeliveryInput,
  type LambdaEventSource,
  type LambdaHttpApiEvent,
  type LambdaRestEvent,
  type LambdaTestContext,
} from './lambda-events.js'
export { type OrderingConformanceOptions, orderingConformance } from './ordering-conformance.js'
export { createFaithfulSender } from './sender.js'
export { listenSender, type SenderListener } from './sender-listen.js'
export {
  type EmitResult,
  type FaithfulSender,
  type FaithfulSenderOptions,
  SENDER_DELIVERIES_CAP,
  SENDER_DISABLE_AFTER,
  SENDER_EMAIL_RETENTION_MS,
  SENDER_INITIAL_BACKOFF_MS,
  SENDER_MAX_ATTEMPTS,
  SENDER_MAX_BACKOFF_MS,
  SENDER_PAYLOAD_LIFETIME_MS,
  SENDER_RECEIVER_TIMEOUT_MS,
  type SenderApiFault,
  type SenderApiRequest,
  type SenderAttempt,
  type SenderDelivery,
  type SenderDeliveryState,
  type SenderEmail,
  type SenderEmailEvent,
  type SenderEndpoint,
  TEST_API_KEY,
} from './sender-types.js'
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

/**
 * The dedup-store conformance suite against DynamoDBDedupStore on dynalite (npm, started for this
 * file: test/services/dynalite.ts): a store on a client the app gives, a store that makes its own
 * client from a region and an endpoint, two stores on one table used in turn, and the same suite
 * through a proxy that returns the item of a failed condition as the DynamoDB service does
 * (`ReturnValuesOnConditionCheckFailure: ALL_OLD`, which dynalite ignores). The ordering suite
 * checks that the store declares no ordering and still deduplicates with order options. dynalite
 * serves one call at a time: each suite's cases run one after another (200 concurrent claims of
 * five cases at once overran the store's call deadline), the four suites side by side, with the
 * call deadline stretched by TEST_TIME_SCALE (200 claims of one case at a time, four suites at
 * once, overran 5 s under test:stress), and 50 concurrent claims of one key rather than 200:
 * dynalite answers them one by one, so more only queue longer (200 of the proxied suite, whose
 * proxy reads the item again for every failed condition, overran even 20 s in a full run on a
 * busy machine), while that exactly one is granted is the table's conditional write either way.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { DEFAULT_DYNAMODB_CALL_TIMEOUT_MS, DynamoDBDedupStore } from '@email-webhooks/core/dynamodb'
import { orderingConformance } from '@email-webhooks/core/testing'
import { afterAll, beforeAll, describe, it } from 'vitest'
import { type Dynalite, type DynamoProxy, LOCAL_CREDENTIALS, startDynalite, startDynamoProxy } from '../services/dynalite.js'
import { scaled } from '../support/time.js'
import { AlternatingStore, conformance } from './conformance-helpers.js'

/**
 * The store's call deadline is a margin here, not what the suites test: dynalite serves every
 * suite's calls in one JavaScript process (200 concurrent claims of four suites at once overran
 * the default 5 s in a full run beside the long files, and 15 s under test:stress).
 */
const callTimeoutMs = scaled(4 * DEFAULT_DYNAMODB_CALL_TIMEOUT_MS)
/** Concurrent claims of one key in the suites (the kit's default is 200): see the file's comment. */
const CONCURRENT_CLAIMS = 50
let server: Dynalite
let proxy: DynamoProxy
let client: DynamoDBClient
let proxied: DynamoDBClient

beforeAll(async () => {
  server = await startDynalite()
  proxy = await startDynamoProxy(server.endpoint, 'all-old')
  await Promise.all([server.createTable('email_webhook_dedup'), server.createTable('hooks_given_client', 'id')])
  client = server.client()
  proxied = server.client({ endpoint: proxy.endpoint })
  process.env.AWS_ACCESS_KEY_ID = LOCAL_CREDENTIALS.accessKeyId
  process.env.AWS_SECRET_ACCESS_KEY = LOCAL_CREDENTIALS.secretAccessKey
})
afterAll(async () => {
  client?.destroy()
  proxied?.destroy()
  await proxy?.stop()
  await server?.stop()
})

conformance(
  'DynamoDBDedupStore (a given DynamoDBClient, table "hooks_given_client" keyed by "id", dynalite)',
  () => new DynamoDBDedupStore({ client, table: 'hooks_given_client', partitionKey: 'id', callTimeoutMs }),
  'one-by-one',
  { concurrency: CONCURRENT_CLAIMS },
)
conformance(
  'DynamoDBDedupStore (its own client from region + endpoint, default table, dynalite)',
  () => new DynamoDBDedupStore({ region: 'us-east-1', endpoint: server.endpoint, callTimeoutMs }),
  'one-by-one',
  { concurrency: CONCURRENT_CLAIMS },
)
conformance(
  'DynamoDBDedupStore (two clients on one table, calls alternate, dynalite)',
  () =>
    new AlternatingStore([
      new DynamoDBDedupStore({ client, callTimeoutMs }),
      new DynamoDBDedupStore({ region: 'us-east-1', endpoint: server.endpoint, callTimeoutMs }),
    ]),
  'one-by-one',
  { concurrency: CONCURRENT_CLAIMS },
)
conformance(
  'DynamoDBDedupStore (failed conditions return the item, ALL_OLD, as the service does: dynalite behind a proxy)',
  () => new DynamoDBDedupStore({ client: proxied, callTimeoutMs }),
  'one-by-one',
  { concurrency: CONCURRENT_CLAIMS },
)

orderingConformance(
  'DynamoDBDedupStore (dynalite)',
  { describe, it },
  { createStore: () => new DynamoDBDedupStore({ client, callTimeoutMs }), expectCapability: false },
)

/**
 * The Lambda handler on its documented store, DynamoDBDedupStore, against dynalite (npm; through a
 * proxy that plays the DynamoDB service's throttling, test/services/dynalite.ts): the claim's lease
 * ends with the invocation (`context.getRemainingTimeInMillis()`), so an event whose invocation
 * timed out is taken by the sender's next attempt as soon as that invocation's time is up, not
 * `leaseMs` later (Powertools' records stuck "in progress"); a concurrent copy is answered 409 with
 * Retry-After, never 500; a throttled table is answered 503 with Retry-After, never a 2xx without
 * a record, and the handler runs once in all.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { DynamoDBDedupStore } from '@email-webhooks/core/dynamodb'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { emailWebhook } from '@email-webhooks/lambda'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Dynalite, type DynamoProxy, startDynalite, startDynamoProxy } from '../services/dynalite.js'
import { scaled, sleep } from '../support/time.js'
import { lambdaContext, lambdaEvent } from './lambda-events.js'

const TABLE = 'hooks_lambda'
let server: Dynalite
let proxy: DynamoProxy
let client: DynamoDBClient

beforeAll(async () => {
  server = await startDynalite()
  proxy = await startDynamoProxy(server.endpoint)
  await server.createTable(TABLE)
  client = server.client({ endpoint: proxy.endpoint, maxAttempts: 2 })
})
afterAll(async () => {
  client?.destroy()
  await proxy?.stop()
  await server?.stop()
})

describe('Lambda handler on DynamoDBDedupStore', () => {
  it("ends the claim's lease with the invocation: after a timed-out invocation, the sender's next attempt runs the handler once its time is up", async () => {
    const runs: number[] = []
    let stuck: (() => void) | undefined
    const handler = emailWebhook(
      TEST_SECRET,
      {
        'email.bounced': async (_event, ctx) => {
          runs.push(ctx.attempt)
          // The first run outlives its invocation (Lambda stops it at its timeout); later runs are quick.
          if (ctx.attempt === 1) await new Promise<void>((resolve) => (stuck = resolve))
        },
      },
      { store: new DynamoDBDedupStore({ client, table: TABLE }), logger: false },
    )
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const post = (remainingMs: number) => handler(lambdaEvent('function-url', delivery.headers, delivery.body), lambdaContext(remainingMs))
    // The first invocation has 3 s (stretched by TEST_TIME_SCALE): enough for the copy below to reach the
    // claim while it lives, on a machine busy with the whole suite (800 ms was not, in CI's Node 24 run).
    const firstMs = scaled(3_000)
    const firstEnds = Date.now() + firstMs
    const first = post(firstMs)
    while (runs.length === 0) await sleep(5)
    // While the first invocation lives, a copy of the delivery is told to come back: 409 with Retry-After, not 500.
    const copy = await post(10_000)
    expect(copy.statusCode).toBe(409)
    expect(JSON.parse(copy.body).error.code).toBe('in_flight')
    // Retry-After is the time the first invocation has left (whole seconds, rounded up), not leaseMs.
    const retryAfter = Number(copy.headers?.['retry-after'])
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil(firstMs / 1000))
    // The first invocation's time is up: Lambda has stopped it. The next attempt runs the handler (attempt 2),
    // without waiting out leaseMs (30 s by default).
    await sleep(Math.max(0, firstEnds - Date.now()) + 100)
    const retry = await post(10_000)
    expect([retry.statusCode, retry.body]).toEqual([200, '{"ok":true}'])
    expect(runs).toEqual([1, 2])
    expect((await post(10_000)).body).toBe('{"ok":true,"duplicate":true}')
    stuck?.()
    await first
    expect(runs).toEqual([1, 2])
  })

  it('keeps the full leaseMs when the invocation has more time left than that', async () => {
    let release: (() => void) | undefined
    const handler = emailWebhook(
      TEST_SECRET,
      { 'email.bounced': () => new Promise<void>((resolve) => (release = resolve)) },
      { store: new DynamoDBDedupStore({ client, table: TABLE }), logger: false, leaseMs: 20_000 },
    )
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const post = () => handler(lambdaEvent('function-url', delivery.headers, delivery.body), lambdaContext(900_000))
    const first = post()
    while (release === undefined) await sleep(5)
    const copy = await post()
    expect(copy.statusCode).toBe(409)
    expect(Number(copy.headers?.['retry-after'])).toBe(20)
    release()
    expect((await first).statusCode).toBe(200)
  })

  for (const mode of ['provisioned-throttle', 'throttle'] as const) {
    it(`answers 503 with Retry-After when DynamoDB throttles (${mode === 'throttle' ? 'ThrottlingException' : 'ProvisionedThroughputExceededException'}), at the claim and at the complete, never 2xx before the record`, async () => {
      const runs: string[] = []
      const handler = emailWebhook(
        TEST_SECRET,
        {
          'email.bounced': (event) => {
            runs.push(event.id)
            // The table is throttled between the handler and its complete.
            proxy.mode = mode
          },
        },
        { store: new DynamoDBDedupStore({ client, table: TABLE }), logger: false },
      )
      const delivery = await createSignedDelivery({ type: 'email.bounced' })
      const post = () => handler(lambdaEvent('function-url', delivery.headers, delivery.body), lambdaContext(10_000))
      try {
        proxy.mode = mode
        const atClaim = await post()
        expect(atClaim.statusCode).toBe(503)
        expect(atClaim.headers?.['retry-after']).toBe('1')
        expect(JSON.parse(atClaim.body).error.code).toBe('store_unavailable')
        expect(runs).toEqual([])
        proxy.mode = 'pass'
        const atComplete = await post()
        expect(atComplete.statusCode).toBe(503)
        expect(atComplete.headers?.['retry-after']).toBe('1')
        expect(runs).toHaveLength(1)
      } finally {
        proxy.mode = 'pass'
      }
      // The throttling ends: the receiver records the event in the background, and the retry is a duplicate.
      let again = await post()
      for (let i = 0; i < 50 && again.statusCode !== 200; i++) {
        await sleep(100)
        again = await post()
      }
      expect([again.statusCode, again.body]).toEqual([200, '{"ok":true,"duplicate":true}'])
      expect(runs).toHaveLength(1)
    })
  }
})

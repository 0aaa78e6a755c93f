/**
 * Invoking the Lambda handler on one's machine with the testing kit's `createLambdaEvent`: the
 * script of the AWS Lambda page (docs/getting-started/lambda.md, src/invoke-locally.js) as a process against a real Redis, each source
 * answered 200 and then as a duplicate; and the adapter answering the kit's events of each source
 * and form (base64 bodies, ALB with multi-value headers) in the shape that source expects.
 */
import { execFile } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import {
  createLambdaContext,
  createLambdaEvent,
  createSignedDelivery,
  type LambdaEventSource,
  TEST_SECRET,
} from '@email-webhooks/core/testing'
import { emailWebhook } from '@email-webhooks/lambda'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type RunningServer, startRedis } from '../../../test/services/servers.js'

const run = promisify(execFile)
const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '../src/invoke-locally.js')

let redis: RunningServer
beforeAll(async () => {
  redis = await startRedis()
}, 60_000)
afterAll(() => redis?.stop())

describe('invoking the handler locally with createLambdaEvent', () => {
  it('runs the script of the docs: each source answered 200, then the same delivery as a duplicate', async () => {
    const { stdout } = await run(process.execPath, [SCRIPT], {
      timeout: 30_000,
      env: { PATH: process.env.PATH ?? '', EMAIL_WEBHOOK_SECRET: TEST_SECRET, REDIS_URL: redis.url },
    })
    const lines = stdout.trim().split('\n')
    expect(lines.filter((line) => line.includes('bounced'))).toHaveLength(3)
    expect(lines.filter((line) => !line.includes('bounced'))).toEqual([
      'http-api: 200 {"ok":true}, again: 200 {"ok":true,"duplicate":true}',
      'rest: 200 {"ok":true}, again: 200 {"ok":true,"duplicate":true}',
      'alb: 200 {"ok":true}, again: 200 {"ok":true,"duplicate":true}',
    ])
  })

  it.each([
    ['http-api', {}],
    ['http-api', { base64: true }],
    ['rest', {}],
    ['rest', { base64: true }],
    ['alb', {}],
    ['alb', { base64: true, multiValueHeaders: true }],
  ] as const)('gives the adapter a %s event it answers in its own shape (%j), and refuses a tampered one', async (source, options) => {
    const handled: string[] = []
    const handler = emailWebhook(
      TEST_SECRET,
      { 'email.bounced': (event) => void handled.push(event.id) },
      { store: 'memory', logger: false },
    )
    // A body with a character outside ASCII: base64 keeps its exact bytes.
    const id = crypto.randomUUID()
    const event = { id, type: 'email.bounced', created_at: new Date().toISOString(), data: { id: crypto.randomUUID(), note: 'héllo 📨' } }
    const delivery = await createSignedDelivery({ event })
    const result = await handler(
      createLambdaEvent(source as LambdaEventSource, delivery, { ...options, path: '/webhooks' }),
      createLambdaContext(),
    )
    expect([result.statusCode, result.body]).toEqual([200, '{"ok":true}'])
    expect(handled).toEqual([delivery.event.id])
    if (source === 'alb') {
      expect(result.statusDescription).toBe('200 OK')
      expect(result.multiValueHeaders !== undefined).toBe('multiValueHeaders' in options)
    } else expect(result.statusDescription).toBeUndefined()
    const tampered = { ...delivery, body: delivery.body.replace('héllo', 'hello') }
    expect((await handler(createLambdaEvent(source as LambdaEventSource, tampered, options), createLambdaContext())).statusCode).toBe(401)
  })

  it('refuses a source it does not know, naming the three', () => {
    expect(() => createLambdaEvent('sqs' as LambdaEventSource, { headers: {}, body: '' })).toThrow(
      "createLambdaEvent's source must be 'http-api', 'rest' or 'alb', got \"sqs\".",
    )
  })

  it('gives a context whose time left counts down from what was asked', () => {
    const context = createLambdaContext(3_000)
    expect(context.getRemainingTimeInMillis()).toBeGreaterThan(2_900)
    expect(context.getRemainingTimeInMillis()).toBeLessThanOrEqual(3_000)
  })
})

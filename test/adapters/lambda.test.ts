/**
 * What is particular to the Lambda handler (the behaviour suite runs the rest over every event
 * source): a store is required and memory is said at construction; the answer has the shape its
 * source expects; a base64 body over the limit is refused before it is decoded; the exact bytes
 * arrive through base64; repeated headers are refused; non-POST and non-HTTP events; handlers see
 * the invocation; and nothing is left running after the answer.
 */
import { execFile } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { DedupStoreError, MemoryDedupStore, signWebhook } from '@email-webhooks/core'
import { createEvent, createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { emailWebhook } from '@email-webhooks/lambda'
import type { SQSEvent } from 'aws-lambda'
import { describe, expect, it } from 'vitest'
import { scaled } from '../support/time.js'
import { lambdaContext, lambdaEvent } from './lambda-events.js'

const TEST_DIR = join(dirname(fileURLToPath(import.meta.url)), '..')
const json = (body: string) => JSON.parse(body) as { ok?: boolean; error?: { code: string; message: string } }

describe('Lambda handler', () => {
  it('refuses to be built without a store, naming the DynamoDB, PostgreSQL and Redis stores, and opens no SQLite file', () => {
    // @ts-expect-error store is required on Lambda
    const build = () => emailWebhook(TEST_SECRET, {}, {})
    expect(build).toThrow(DedupStoreError)
    expect(build).toThrow(/DynamoDBDedupStore.*PostgresDedupStore.*RedisDedupStore.*store: 'memory'/)
    try {
      build()
    } catch (error) {
      expect((error as DedupStoreError).code).toBe('misconfigured')
    }
  })

  it('says at construction, once per process, that a memory store does not outlive the function (logger: false silences it)', async () => {
    const script = `
      import { emailWebhook } from '@email-webhooks/lambda'
      const warnings = []
      const logger = { warn: (m) => warnings.push(m), error: () => {} }
      emailWebhook('whsec_x', {}, { store: 'memory', logger: false })
      emailWebhook('whsec_x', {}, { store: 'memory', logger })
      emailWebhook('whsec_x', {}, { store: 'memory', logger })
      console.log(JSON.stringify(warnings))`
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      cwd: TEST_DIR,
      timeout: 20_000,
    })
    const warnings = JSON.parse(stdout) as string[]
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/memory.*DynamoDBDedupStore.*PostgresDedupStore.*RedisDedupStore/)
  })

  it('answers each source in its shape: ALB with statusDescription, and multiValueHeaders when its target group uses them', async () => {
    const handler = emailWebhook(TEST_SECRET, {}, { store: new MemoryDedupStore() })
    const shapes: Record<string, string[]> = {}
    for (const source of ['rest', 'http-api', 'function-url', 'alb', 'alb-multi-value'] as const) {
      const delivery = await createSignedDelivery()
      const result = await handler(lambdaEvent(source, delivery.headers, delivery.body), lambdaContext())
      expect([result.statusCode, result.body]).toEqual([200, '{"ok":true}'])
      shapes[source] = Object.keys(result).sort()
    }
    expect(shapes).toEqual({
      rest: ['body', 'headers', 'isBase64Encoded', 'statusCode'],
      'http-api': ['body', 'headers', 'isBase64Encoded', 'statusCode'],
      'function-url': ['body', 'headers', 'isBase64Encoded', 'statusCode'],
      alb: ['body', 'headers', 'isBase64Encoded', 'statusCode', 'statusDescription'],
      'alb-multi-value': ['body', 'isBase64Encoded', 'multiValueHeaders', 'statusCode', 'statusDescription'],
    })
    const delivery = await createSignedDelivery()
    const alb = await handler(lambdaEvent('alb-multi-value', delivery.headers, delivery.body), lambdaContext())
    expect([alb.statusDescription, alb.multiValueHeaders]).toEqual(['200 OK', { 'content-type': ['application/json'] }])
  })

  it('refuses a base64 body that decodes past maxBodyBytes before decoding it', async () => {
    const errors: string[] = []
    const handler = emailWebhook(
      TEST_SECRET,
      {},
      { store: new MemoryDedupStore(), maxBodyBytes: 999, onError: (e) => void errors.push(e.code) },
    )
    const delivery = await createSignedDelivery()
    // 1,336 characters that are not base64 at all: decoding them would give an empty body and a 401.
    const event = { ...lambdaEvent('rest-binary', delivery.headers, delivery.body), body: '!'.repeat(1336) }
    const result = await handler(event, lambdaContext())
    expect([result.statusCode, json(result.body).error?.code, errors]).toEqual([413, 'body_too_large', ['body_too_large']])
    // 4·⌈999/3⌉ = 1,332 characters is the longest base64 of at most 999 bytes: not refused up front.
    const short = await handler({ ...event, body: '!'.repeat(1332) }, lambdaContext())
    expect(short.statusCode).toBe(401)
  })

  it('verifies the exact bytes (BOM, invalid UTF-8) of a base64 body', async () => {
    const handler = emailWebhook(TEST_SECRET, {}, { store: new MemoryDedupStore() })
    const event = createEvent('email.bounced')
    const text = new TextEncoder().encode(JSON.stringify(event).replace('"data":{', '"data":{"note":"X",'))
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...text])
    bytes[new TextDecoder().decode(text).indexOf('"X"') + 4] = 0xff
    const { headers } = await signWebhook({ secret: TEST_SECRET, body: bytes, id: event.id, timestamp: Math.floor(Date.now() / 1000) })
    for (const source of ['rest-binary', 'alb-multi-value'] as const) {
      const result = await handler(lambdaEvent(source, headers, bytes), lambdaContext())
      expect([source, result.statusCode]).toEqual([source, 200])
      // The second source sees the first's event: a duplicate, verified all the same.
      if (source === 'alb-multi-value') expect(json(result.body)).toEqual({ ok: true, duplicate: true })
    }
  })

  it('refuses a webhook header sent twice: 401 duplicate_header (REST, ALB multi-value), malformed (2.0 joins repeats with commas)', async () => {
    const handler = emailWebhook(TEST_SECRET, {}, { store: new MemoryDedupStore(), logger: false })
    const delivery = await createSignedDelivery()
    const id = delivery.headers['webhook-id'] as string
    const rest = lambdaEvent('rest', delivery.headers, delivery.body)
    if ('multiValueHeaders' in rest && rest.multiValueHeaders) rest.multiValueHeaders['Webhook-Id'] = [id]
    const restResult = await handler(rest, lambdaContext())
    expect([restResult.statusCode, json(restResult.body).error?.code]).toEqual([401, 'duplicate_header'])
    const v2 = lambdaEvent('http-api', { ...delivery.headers, 'Webhook-Id': id }, delivery.body)
    const v2Result = await handler(v2, lambdaContext())
    expect([v2Result.statusCode, json(v2Result.body).error?.code]).toEqual([401, 'malformed_id'])
  })

  it('answers 405 with allow: POST to other methods, and throws for an event that is not an HTTP request', async () => {
    const handler = emailWebhook(TEST_SECRET, {}, { store: new MemoryDedupStore() })
    const rest = { ...lambdaEvent('rest', {}, ''), httpMethod: 'GET' }
    const v2 = lambdaEvent('function-url', {}, '')
    if ('requestContext' in v2 && 'http' in v2.requestContext) v2.requestContext.http.method = 'GET'
    for (const event of [rest, v2]) {
      const result = await handler(event, lambdaContext())
      expect([result.statusCode, result.headers?.allow, json(result.body).error?.code]).toEqual([405, 'POST', 'method_not_allowed'])
    }
    const sqs: SQSEvent = { Records: [] }
    await expect(handler(sqs as never, lambdaContext())).rejects.toThrow(/not an HTTP request from API Gateway/)
  })

  it('gives handlers ctx.lambda (the event and the Lambda context)', async () => {
    const seen: string[] = []
    const handler = emailWebhook(
      TEST_SECRET,
      { 'email.bounced': (_event, ctx) => void seen.push(`${ctx.lambda.context.functionName} ${'httpMethod' in ctx.lambda.event}`) },
      { store: new MemoryDedupStore() },
    )
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    expect((await handler(lambdaEvent('alb', delivery.headers, delivery.body), lambdaContext())).statusCode).toBe(200)
    expect(seen).toEqual(['email-webhooks true'])
  })

  it('leaves nothing running after the answer: a process that only invoked it exits on its own within 1 s', async () => {
    // The receiver's one deadline timer ticks every min(100 ms, handlerTimeoutMs / 20) while a step is watched, then stops.
    // 1 s leaves room for a loaded machine, and a timer left running (storeTimeoutMs 1.5 s, or longer) still fails it.
    const script = `
      import { emailWebhook } from '@email-webhooks/lambda'
      import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
      const handler = emailWebhook(TEST_SECRET, { 'email.bounced': async () => {} }, { store: 'memory', logger: false })
      const d = await createSignedDelivery({ type: 'email.bounced' })
      const event = { version: '2.0', headers: d.headers, body: d.body, isBase64Encoded: false, requestContext: { http: { method: 'POST' } } }
      const result = await handler(event, {})
      const answeredAt = performance.timeOrigin + performance.now()
      process.on('exit', () => console.log(JSON.stringify({ status: result.statusCode, lingeredMs: performance.timeOrigin + performance.now() - answeredAt })))`
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      cwd: TEST_DIR,
      timeout: 20_000,
    })
    const { status, lingeredMs } = JSON.parse(stdout) as { status: number; lingeredMs: number }
    expect(status).toBe(200)
    expect(lingeredMs).toBeLessThan(scaled(1_000))
  })
})

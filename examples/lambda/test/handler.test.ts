/**
 * examples/lambda: the handler module as Lambda loads it, invoked with recorded event shapes (REST
 * API, HTTP API, function URL, ALB). Each fresh import of the module stands for one execution
 * environment: Lambda runs several at once and discards them at will. With the DynamoDB store (on
 * dynalite, reached as the SDK reaches any endpoint: AWS_ENDPOINT_URL_DYNAMODB), the PostgreSQL
 * store and the Redis store, a delivery handled by one environment is a duplicate in another, and
 * 10 copies sent at once to 5 environments run the handler once. template.yaml's table and policy
 * are the store's.
 */
import { readFileSync } from 'node:fs'
import { DYNAMODB_IAM_ACTIONS, DYNAMODB_TTL_ATTRIBUTE, dynamoDBTableInput } from '@email-webhooks/core/dynamodb'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { lambdaContext, lambdaEvent } from '../../../test/adapters/lambda-events.js'
import { type Dynalite, LOCAL_CREDENTIALS, startDynalite } from '../../../test/services/dynalite.js'
import { sharedPostgresAndRedis, type TestServer } from '../../../test/services/servers.js'

type Handler = typeof import('../src/handler.js')['handler']

let services: { postgres: TestServer; redis: TestServer }
let dynamo: Dynalite
const TABLE = 'email-webhooks-example'
beforeAll(async () => {
  ;[services, dynamo] = await Promise.all([sharedPostgresAndRedis(), startDynalite()])
  await dynamo.createTable(TABLE)
}, 120_000)
afterAll(async () => {
  await services?.postgres.stop()
  await services?.redis.stop()
  await dynamo?.stop()
})

/** Loads the module afresh with these variables: a new execution environment with its own store client. */
async function environment(env: Record<string, string>): Promise<Handler> {
  vi.resetModules()
  for (const name of ['DEDUP_TABLE', 'DATABASE_URL', 'REDIS_URL']) delete process.env[name]
  Object.assign(process.env, { EMAIL_WEBHOOK_SECRET: TEST_SECRET }, env)
  return (await import('../src/handler.js')).handler
}

describe.each([
  [
    'DynamoDB',
    () => ({
      DEDUP_TABLE: TABLE,
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    }),
  ],
  ['PostgreSQL', () => ({ DATABASE_URL: services.postgres.url })],
  ['Redis', () => ({ REDIS_URL: services.redis.url })],
])('examples/lambda with the %s store', (_name, env) => {
  it('answers a bounce in one environment and its redelivery in another as a duplicate, across event sources', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {})
    const first = await environment(env())
    const second = await environment(env())
    // Two module instances, two store clients: nothing is shared but the database.
    expect(second.store()).not.toBe(first.store())
    try {
      const delivery = await createSignedDelivery({ type: 'email.bounced' })
      const a = await first(lambdaEvent('http-api', delivery.headers, delivery.body), lambdaContext())
      const again = await createSignedDelivery({ event: delivery.event })
      const b = await second(lambdaEvent('alb', again.headers, again.body), lambdaContext())
      expect([a.statusCode, a.body, b.statusCode, b.body]).toEqual([200, '{"ok":true}', 200, '{"ok":true,"duplicate":true}'])
      const tampered = await first(lambdaEvent('rest', delivery.headers, delivery.body.replace('bounced', 'queued')), lambdaContext())
      expect(tampered.statusCode).toBe(401)
      expect(log.mock.calls.map(([line]) => line)).toEqual([`email ${delivery.event.data.id} bounced`])
    } finally {
      log.mockRestore()
      await first.store().close?.()
      await second.store().close?.()
    }
  })

  it('runs the handler once for 10 copies sent at once to 5 environments; the rest get 200 or 409', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {})
    const handlers: Handler[] = []
    for (let i = 0; i < 5; i++) handlers.push(await environment(env()))
    try {
      const delivery = await createSignedDelivery({ type: 'email.bounced' })
      const sources = ['rest', 'rest-binary', 'http-api', 'function-url', 'alb-multi-value'] as const
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (handlers[i % 5] as Handler)(
            lambdaEvent(sources[i % 5] as (typeof sources)[number], delivery.headers, delivery.body),
            lambdaContext(),
          ),
        ),
      )
      for (const result of results) expect([200, 409]).toContain(result.statusCode)
      expect(log.mock.calls.filter(([line]) => String(line).includes('bounced'))).toHaveLength(1)
    } finally {
      log.mockRestore()
      for (const handler of handlers) await handler.store().close?.()
    }
  })
})

describe('examples/lambda without a store', () => {
  it('refuses to start (a cold-start error that names what to set)', async () => {
    await expect(environment({})).rejects.toThrow(/DEDUP_TABLE \(DynamoDB\), DATABASE_URL \(PostgreSQL\) or REDIS_URL \(Redis\)/)
  })
})

describe('examples/lambda/template.yaml', () => {
  const template = readFileSync(new URL('../template.yaml', import.meta.url), 'utf8')

  it("defines the table as the store needs it: a String partition key, no sort key, on-demand, TTL on 'ttl'", () => {
    const { AttributeDefinitions, KeySchema, BillingMode } = dynamoDBTableInput('hooks')
    const key = KeySchema[0]?.AttributeName
    expect(template).toContain(`BillingMode: ${BillingMode}`)
    expect(template).toContain(
      `AttributeDefinitions:\n        - AttributeName: ${key}\n          AttributeType: ${AttributeDefinitions[0]?.AttributeType}`,
    )
    expect(template).toContain(`KeySchema:\n        - AttributeName: ${key}\n          KeyType: HASH\n`)
    expect(template).toContain(`TimeToLiveSpecification:\n        AttributeName: ${DYNAMODB_TTL_ATTRIBUTE}\n        Enabled: true`)
  })

  it('grants the function exactly the IAM actions the store uses, on the table', () => {
    expect(template).toContain(
      `Action:\n${DYNAMODB_IAM_ACTIONS.map((action) => `                - ${action}\n`).join('')}              Resource: !GetAtt DedupTable.Arn`,
    )
  })
})

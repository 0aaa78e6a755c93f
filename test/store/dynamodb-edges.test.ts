/**
 * DynamoDBDedupStore beyond the conformance suite, against dynalite (npm) and, where the DynamoDB
 * service answers in ways dynalite cannot be made to, a proxy in front of it that answers as the
 * service does (test/services/dynalite.ts): a missing table, a wrong key schema, throttling, a
 * missing IAM permission and a stalled connection each become a DedupStoreError whose code is
 * stable and whose message names the fix (and never a credential); the failed condition's item
 * (`ReturnValuesOnConditionCheckFailure: ALL_OLD`) spares the read that dynalite needs; times are
 * milliseconds in `expiresAt` and seconds only in `ttl`.
 */
import { type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb'
import { DedupStoreError } from '@email-webhooks/core'
import { DYNAMODB_IAM_ACTIONS, DynamoDBDedupStore, dynamoDBTableInput } from '@email-webhooks/core/dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Dynalite, type DynamoProxy, LOCAL_CREDENTIALS, startDynalite, startDynamoProxy } from '../services/dynalite.js'
import { scaled } from '../support/time.js'

const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
const TABLE = 'hooks_edges'

let server: Dynalite
let proxy: DynamoProxy
let client: DynamoDBClient
let proxied: DynamoDBClient

beforeAll(async () => {
  server = await startDynalite()
  proxy = await startDynamoProxy(server.endpoint)
  await Promise.all([server.createTable(TABLE), server.createTable('keyed_by_id', 'id'), server.createTable('keyed_by_number', 'pk', 'N')])
  client = server.client()
  // Two attempts: the SDK retries a throttled call once before it gives up.
  proxied = server.client({ endpoint: proxy.endpoint, maxAttempts: 2 })
})
afterAll(async () => {
  client?.destroy()
  proxied?.destroy()
  await proxy?.stop()
  await server?.stop()
})

/** The error a call rejects with (fails the test when it resolves). */
async function failure(call: Promise<unknown>): Promise<DedupStoreError> {
  const error = await call.then(
    (value) => expect.unreachable(`expected a DedupStoreError, got ${JSON.stringify(value)}`),
    (error: unknown) => error,
  )
  expect(error).toBeInstanceOf(DedupStoreError)
  const text = `${String(error)} ${(error as Error).message}`
  expect(text).not.toContain(LOCAL_CREDENTIALS.secretAccessKey)
  return error as DedupStoreError
}

const key = () => `edges:${crypto.randomUUID()}`

describe('DynamoDBDedupStore: faults name their fix', () => {
  it("rejects with 'misconfigured' when the table does not exist, naming the table, its key and the TTL attribute", async () => {
    const store = new DynamoDBDedupStore({ client, table: 'no_such_table' })
    const error = await failure(store.claim(key(), LONG))
    expect(error.code).toBe('misconfigured')
    expect(error.message).toMatch(/table "no_such_table" does not exist/)
    expect(error.message).toMatch(/String partition key "pk".*CloudFormation or CDK.*dynamoDBTableInput\(\).*TTL on "ttl"/)
    expect(error.cause).toMatchObject({ name: 'ResourceNotFoundException' })
  })

  it("rejects with 'misconfigured' when the table's partition key has another name, and says to pass partitionKey", async () => {
    const store = new DynamoDBDedupStore({ client, table: 'keyed_by_id' })
    const error = await failure(store.claim(key(), LONG))
    expect(error.code).toBe('misconfigured')
    expect(error.message).toMatch(
      /"keyed_by_id" has another key schema.*partition key must be the String attribute "pk".*pass partitionKey/,
    )
  })

  it("rejects with 'misconfigured' when the table's partition key is a Number", async () => {
    const store = new DynamoDBDedupStore({ client, table: 'keyed_by_number' })
    const error = await failure(store.lookup(key()))
    expect(error.code).toBe('misconfigured')
    expect(error.message).toMatch(/another key schema/)
  })

  for (const [mode, name] of [
    ['provisioned-throttle', 'ProvisionedThroughputExceededException'],
    ['throttle', 'ThrottlingException'],
  ] as const) {
    it(`rejects claim and complete with 'throttled' on ${name}, after the SDK's own retry, and names on-demand capacity`, async () => {
      const store = new DynamoDBDedupStore({ client: proxied, table: TABLE })
      const held = await store.claim(key(), LONG)
      if (held.status !== 'acquired') throw new Error(`expected acquired, got ${held.status}`)
      proxy.mode = mode
      const before = proxy.calls.UpdateItem ?? 0
      try {
        for (const call of [() => store.claim(key(), LONG), () => store.complete(held.claim, LONG)]) {
          const error = await failure(call())
          expect(error.code).toBe('throttled')
          expect(error.message).toMatch(new RegExp(`DynamoDB throttled the DynamoDB table "${TABLE}" \\(${name}\\)`))
          expect(error.message).toMatch(/BillingMode PAY_PER_REQUEST/)
        }
        expect((proxy.calls.UpdateItem ?? 0) - before).toBe(4)
      } finally {
        proxy.mode = 'pass'
      }
      // Nothing was written: the claim still holds the key, and completes once the throttling ends.
      expect(await store.complete(held.claim, LONG)).toBe(true)
    })
  }

  it("rejects with 'misconfigured' on AccessDeniedException, naming the IAM actions the role needs", async () => {
    const store = new DynamoDBDedupStore({ client: proxied, table: TABLE })
    proxy.mode = 'deny'
    try {
      const error = await failure(store.claim(key(), LONG))
      expect(error.code).toBe('misconfigured')
      expect(DYNAMODB_IAM_ACTIONS).toEqual(['dynamodb:GetItem', 'dynamodb:UpdateItem'])
      expect(error.message).toMatch(/grant the function's role dynamodb:GetItem and dynamodb:UpdateItem on the table's ARN/)
    } finally {
      proxy.mode = 'pass'
    }
  })

  it("ends a call that hangs after callTimeoutMs with 'timeout'", async () => {
    const store = new DynamoDBDedupStore({ client: proxied, table: TABLE, callTimeoutMs: 300 })
    proxy.mode = 'stall'
    const started = performance.now()
    try {
      const error = await failure(store.claim(key(), LONG))
      expect(error.code).toBe('timeout')
      expect(error.message).toMatch(/did not answer within the store's callTimeoutMs/)
      expect(performance.now() - started).toBeLessThan(scaled(3_000))
    } finally {
      proxy.mode = 'pass'
    }
  })

  it('acquires a claim the SDK sent again after its first answer was lost: the item holds this very claim', async () => {
    const store = new DynamoDBDedupStore({ client: proxied, table: TABLE })
    proxy.mode = 'all-old'
    proxy.loseNext = { operation: 'UpdateItem', how: 'drop' }
    try {
      const id = key()
      // Before, the second send met the first one's lease and answered in_flight to itself for the whole lease.
      expect(await store.claim(id, LONG)).toMatchObject({ status: 'acquired', claim: { attempt: 1 } })
      expect(proxy.loseNext).toBeUndefined()
    } finally {
      proxy.loseNext = undefined
      proxy.mode = 'pass'
    }
  })

  it('gives back a claim past callTimeoutMs that the table took: the next claim of the event is acquired, not in_flight for the lease', async () => {
    // The deadline the stalled claim runs into; the calls after it must answer within it too (300 ms
    // was too short for them in a full run on a busy machine: the next claim timed out as well).
    const store = new DynamoDBDedupStore({ client: proxied, table: TABLE, callTimeoutMs: scaled(1_500) })
    proxy.mode = 'all-old'
    proxy.loseNext = { operation: 'UpdateItem', how: 'stall' }
    try {
      const id = key()
      const first = await store.claim(id, LONG).catch((error: unknown) => error)
      if (first instanceof DedupStoreError) {
        expect(first.code).toBe('timeout')
        expect(await store.lookup(id)).toBe('in_flight')
        expect(await store.claim(id, LONG)).toMatchObject({ status: 'acquired', claim: { attempt: 2 } })
      } else {
        // Node 22's run: the stalled connection was dropped before the deadline, the SDK sent the
        // write again, and the store knew its own claim (the test above): acquired at once.
        expect(first).toMatchObject({ status: 'acquired', claim: { attempt: 1 } })
      }
    } finally {
      proxy.loseNext = undefined
      proxy.mode = 'pass'
      await store.close()
    }
  })

  it("rejects with 'auth_failed' when the client has no usable credentials, without printing them", async () => {
    const bad = server.client({
      endpoint: proxy.endpoint,
      credentials: async () =>
        Promise.reject(Object.assign(new Error('Could not load credentials from any providers'), { name: 'CredentialsProviderError' })),
    })
    try {
      const error = await failure(new DynamoDBDedupStore({ client: bad, table: TABLE }).claim(key(), LONG))
      expect(error.code).toBe('auth_failed')
      expect(error.message).toMatch(/refused the credentials|credentials/)
    } finally {
      bad.destroy()
    }
  })
})

describe('DynamoDBDedupStore: one round trip where the service returns the item of a failed condition', () => {
  async function failedClaimReads(mode: 'pass' | 'all-old'): Promise<number> {
    const store = new DynamoDBDedupStore({ client: proxied, table: TABLE })
    proxy.mode = mode
    try {
      const done = key()
      const first = await store.claim(done, LONG)
      if (first.status !== 'acquired') throw new Error('expected acquired')
      await store.complete(first.claim, LONG)
      const held = key()
      expect((await store.claim(held, LONG)).status).toBe('acquired')
      const before = proxy.calls.GetItem ?? 0
      expect((await store.claim(done, LONG)).status).toBe('duplicate')
      const inFlight = await store.claim(held, LONG)
      expect(inFlight.status).toBe('in_flight')
      expect(inFlight.status === 'in_flight' && inFlight.retryAfterMs > 50_000).toBe(true)
      return (proxy.calls.GetItem ?? 0) - before
    } finally {
      proxy.mode = 'pass'
    }
  }

  it('tells duplicate from in_flight from the ALL_OLD item alone, as on DynamoDB (the proxy plays the service: dynalite ignores ALL_OLD)', async () => {
    expect(await failedClaimReads('all-old')).toBe(0)
  })

  it('reads the item with a consistent GetItem where the server returns none (dynalite itself, DynamoDB Local before 2.x)', async () => {
    expect(await failedClaimReads('pass')).toBe(2)
  })
})

describe('DynamoDBDedupStore: units and items', () => {
  async function item(table: string, pk: string): Promise<Record<string, { S?: string; N?: string }>> {
    const output = await client.send(new GetItemCommand({ TableName: table, Key: { pk: { S: pk } }, ConsistentRead: true }))
    return output.Item as Record<string, { S?: string; N?: string }>
  }

  it('keeps expiresAt in milliseconds and ttl in seconds (rounded up), for a lease and for a done record', async () => {
    const store = new DynamoDBDedupStore({ client, table: TABLE })
    const k = key()
    const before = Date.now()
    const claimed = await store.claim(k, { leaseMs: 30_000, retentionMs: 604_800_000 })
    const after = Date.now()
    if (claimed.status !== 'acquired') throw new Error('expected acquired')
    const lease = await item(TABLE, k)
    const leaseEnd = Number(lease.expiresAt?.N)
    expect(leaseEnd).toBeGreaterThanOrEqual(before + 30_000)
    expect(leaseEnd).toBeLessThanOrEqual(after + 30_000)
    // A lease is kept an hour past its end (its attempt count), for TTL.
    expect(Number(lease.ttl?.N)).toBe(Math.ceil((leaseEnd + 3_600_000) / 1000))
    expect(lease).toMatchObject({ pk: { S: k }, status: { S: 'lease' }, token: { S: claimed.claim.token }, attempt: { N: '1' } })
    await store.complete(claimed.claim, { retentionMs: 604_800_000 })
    const done = await item(TABLE, k)
    const doneEnd = Number(done.expiresAt?.N)
    expect(doneEnd).toBeGreaterThanOrEqual(before + 604_800_000)
    expect(doneEnd).toBeLessThanOrEqual(Date.now() + 604_800_000)
    expect(Number(done.ttl?.N)).toBe(Math.ceil(doneEnd / 1000))
    expect(String(Number(done.ttl?.N))).toHaveLength(10)
    expect(String(doneEnd)).toHaveLength(13)
    expect(done.token).toBeUndefined()
    expect(done.status).toEqual({ S: 'done' })
  })

  it('never depends on TTL deletion: a done item past its retention that TTL has not deleted yet is claimable, attempt 1', async () => {
    // dynalite never deletes by TTL, like DynamoDB within its lag of up to days.
    let now = Date.now()
    const store = new DynamoDBDedupStore({ client, table: TABLE, now: () => now })
    const k = key()
    const first = await store.claim(k, LONG)
    if (first.status !== 'acquired') throw new Error('expected acquired')
    await store.complete(first.claim, { retentionMs: 1_000 })
    expect((await store.claim(k, LONG)).status).toBe('duplicate')
    now += 1_001
    expect(await item(TABLE, k)).toBeDefined()
    const again = await store.claim(k, LONG)
    expect(again.status === 'acquired' && again.claim.attempt).toBe(1)
  })

  it('gives the CreateTable input of its table: a String partition key, no sort key, on-demand', () => {
    expect(dynamoDBTableInput('hooks', 'id')).toEqual({
      TableName: 'hooks',
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    })
  })
})

describe('DynamoDBDedupStore: options and close', () => {
  it('refuses bad options at construction with a TypeError that says what is wrong', () => {
    expect(() => new DynamoDBDedupStore({ client, table: 'no' })).toThrow(/table must be a DynamoDB table name/)
    expect(() => new DynamoDBDedupStore({ client, region: 'us-east-1' })).toThrow(/either client, or region/)
    expect(() => new DynamoDBDedupStore({ client, callTimeoutMs: 1.5 })).toThrow(/callTimeoutMs must be a whole number of milliseconds/)
    expect(() => new DynamoDBDedupStore({ region: 'us-east-1', endpoint: 'localhost:8000' })).toThrow(/endpoint must be an http\(s\) URL/)
    expect(() => new DynamoDBDedupStore({ client: {} as DynamoDBClient })).toThrow(/client must be a DynamoDBClient/)
    const region = process.env.AWS_REGION
    delete process.env.AWS_REGION
    try {
      expect(() => new DynamoDBDedupStore({})).toThrow(/needs \{ client \} or \{ region \} \(AWS_REGION is not set\)/)
    } finally {
      if (region !== undefined) process.env.AWS_REGION = region
    }
  })

  it("closes the client it made, rejects later calls with 'closed', and leaves a given client open", async () => {
    const made = new DynamoDBDedupStore({ region: 'us-east-1', endpoint: server.endpoint, table: TABLE })
    await made.close()
    expect((await failure(made.claim(key(), LONG))).code).toBe('closed')
    expect((await failure(made.lookup(key()))).code).toBe('closed')
    const given = new DynamoDBDedupStore({ client, table: TABLE })
    await given.close()
    expect((await new DynamoDBDedupStore({ client, table: TABLE }).claim(key(), LONG)).status).toBe('acquired')
  })
})

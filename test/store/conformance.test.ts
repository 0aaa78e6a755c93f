import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { createReceiver, type DedupStore, DedupStoreError, type EventOrder, MemoryDedupStore } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createEmailSequence, dedupStoreConformance, type SignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { AlternatingStore, conformance, ordering } from './conformance-helpers.js'

const here = dirname(fileURLToPath(import.meta.url))

/** `store`, each call of it answered `ms` later. */
function slowStore(store: DedupStore, ms: number): DedupStore {
  const later = <T>(value: Promise<T>) => value.then((result) => new Promise<T>((resolve) => setTimeout(() => resolve(result), ms)))
  return {
    claim: (key, opts) => later(store.claim(key, opts)),
    complete: (claim, opts) => later(store.complete(claim, opts)),
    release: (claim) => later(store.release(claim)),
    lookup: (key) => later((store.lookup as NonNullable<DedupStore['lookup']>).call(store, key)),
  }
}

/** `store`, but a completed key is forgotten at once (a retention of 1 ms): breaks the contract. */
function forgetfulStore(store: DedupStore): DedupStore {
  return {
    claim: (key, opts) => store.claim(key, opts),
    complete: async (claim, opts) => {
      const done = await store.complete(claim, { ...opts, retentionMs: 1 })
      await new Promise((resolve) => setTimeout(resolve, 5))
      return done
    },
    release: (claim) => store.release(claim),
    lookup: (key) => (store.lookup as NonNullable<DedupStore['lookup']>).call(store, key),
  }
}
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-conformance-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

conformance('MemoryDedupStore', () => new MemoryDedupStore())
ordering('MemoryDedupStore', () => new MemoryDedupStore())

// A new store (and connection) per test on one file per durability: the suite also checks
// that a reopened file keeps working.
conformance(
  "SqliteDedupStore (durability 'full', temp file)",
  () => new SqliteDedupStore({ path: join(dir, 'full.db'), durability: 'full' }),
)
conformance(
  "SqliteDedupStore (durability 'normal', temp file)",
  () => new SqliteDedupStore({ path: join(dir, 'normal.db'), durability: 'normal' }),
)

conformance(
  'SqliteDedupStore (two connections on one file, calls alternate)',
  () =>
    new AlternatingStore([new SqliteDedupStore({ path: join(dir, 'shared.db') }), new SqliteDedupStore({ path: join(dir, 'shared.db') })]),
)

// Done records sealed into a generation every 100 (generations.ts), so that the suite's keys are
// found in sealed generations, through the in-memory index, by the store and by another connection.
conformance(
  'SqliteDedupStore (a generation sealed every 100 records, two connections alternate)',
  () =>
    new AlternatingStore([
      new SqliteDedupStore({ path: join(dir, 'sealing.db'), generationRecords: 100 }),
      new SqliteDedupStore({ path: join(dir, 'sealing.db'), generationRecords: 100 }),
    ]),
)

ordering("SqliteDedupStore (durability 'full', temp file)", () => new SqliteDedupStore({ path: join(dir, 'full.db'), durability: 'full' }))
ordering(
  "SqliteDedupStore (durability 'normal', temp file)",
  () => new SqliteDedupStore({ path: join(dir, 'normal.db'), durability: 'normal' }),
)
ordering(
  'SqliteDedupStore (two connections on one file, calls alternate)',
  () =>
    new AlternatingStore([new SqliteDedupStore({ path: join(dir, 'shared.db') }), new SqliteDedupStore({ path: join(dir, 'shared.db') })]),
)

describe('dedupStoreConformance on a machine too slow to look inside a short retention or lease', () => {
  const RETENTION_CASES = [
    'forgets a completed key once its retention expires',
    "lookup: answers 'absent' once the retention of a completed key expires",
    "lookup: answers 'absent' once the lease expires",
  ]
  /** The named cases of the suite on `createStore` with a short retention and lease of `shortMs`: each one's error, or undefined. */
  async function run(createStore: () => DedupStore, shortMs: number, names: string[]): Promise<(string | undefined)[]> {
    const cases = new Map<string, () => Promise<void>>()
    dedupStoreConformance(
      'guard',
      { describe: (_name, fn) => fn(), it: (name, fn) => void cases.set(name, fn as () => Promise<void>) },
      { createStore, shortMs },
    )
    return Promise.all(
      names.map(async (name) => {
        const body = cases.get(name)
        if (!body) return `no case named ${name}`
        return body().then(
          () => undefined,
          (error: Error) => error.message,
        )
      }),
    )
  }

  it('passes a correct store whose every call takes longer than the retention (150 ms against 100)', async () => {
    expect(await run(() => slowStore(new MemoryDedupStore(), 150), 100, RETENTION_CASES)).toEqual([undefined, undefined, undefined])
  })

  it('still fails a store that forgets a completed key at once, when its calls are quick', async () => {
    // A 5 s retention: quick calls come back well inside it, however busy the machine.
    const errors = await run(() => forgetfulStore(new MemoryDedupStore()), 5_000, RETENTION_CASES.slice(0, 2))
    expect(errors[0]).toMatch(/duplicate while retained/)
    expect(errors[1]).toMatch(/done while retained/)
  })
})

describe('dedupStoreConformance under node:test', () => {
  it('runs every conformance test green with node:test describe/it', async () => {
    // Count the tests the suite registers, so the child's report is checked against the real number.
    // The memory store has no completedBy(): those tests are skipped.
    let expected = 0
    let completedBys = 0
    dedupStoreConformance(
      'count',
      {
        describe: (_name, fn) => fn(),
        it: (name) => {
          expected++
          if (name.startsWith('completedBy: ')) completedBys++
        },
      },
      { createStore: () => new MemoryDedupStore() },
    )
    expect(expected).toBeGreaterThanOrEqual(10)
    expect(completedBys).toBeGreaterThanOrEqual(2)

    const file = join(here, 'conformance-node-test.mjs')
    const { stdout } = await promisify(execFile)(process.execPath, ['--test', '--test-reporter=tap', file], {
      cwd: here,
      timeout: 30_000,
    })
    // execFile rejects on a non-zero exit code, so reaching here means exit code 0.
    expect(stdout).toMatch(/DedupStore conformance: MemoryDedupStore under node:test/)
    expect(stdout).toContain(`# tests ${expected}\n`)
    expect(stdout).toContain(`# pass ${expected - completedBys}\n`)
    expect(stdout).toMatch(new RegExp(`^# skip(ped)? ${completedBys}$`, 'm'))
    expect(stdout).toContain('# fail 0\n')
    expect(stdout).not.toMatch(/^not ok/m)
  })

  it('makes node --test exit non-zero when a store breaks the contract', async () => {
    // The other side of the check above: a store that never dedups must fail under node:test.
    const file = join(here, 'conformance-node-test.mjs')
    const result = await promisify(execFile)(process.execPath, ['--test', '--test-reporter=tap', file], {
      cwd: here,
      timeout: 30_000,
      env: { ...process.env, CONFORMANCE_STORE: 'broken' },
    }).then(
      () => ({ code: 0, stdout: '' }),
      (error: { code?: number; stdout?: string }) => ({ code: error.code, stdout: error.stdout ?? '' }),
    )
    expect(result.code).not.toBe(0)
    expect(result.stdout).toMatch(/^not ok/m)
  })

  it('reports the lookup, extend and completedBy tests as skipped, not passed, for a store without lookup(), extend() and completedBy()', async () => {
    let expected = 0
    let lookups = 0
    let extends_ = 0
    let completedBys = 0
    dedupStoreConformance(
      'count',
      {
        describe: (_name, fn) => fn(),
        it: (name) => {
          expected++
          if (name.startsWith('lookup: ')) lookups++
          if (name.startsWith('extend: ')) extends_++
          if (name.startsWith('completedBy: ')) completedBys++
        },
      },
      { createStore: () => new MemoryDedupStore() },
    )
    expect(lookups).toBeGreaterThanOrEqual(6)
    expect(extends_).toBeGreaterThanOrEqual(3)
    const file = join(here, 'conformance-node-test.mjs')
    const { stdout } = await promisify(execFile)(process.execPath, ['--test', '--test-reporter=tap', file], {
      cwd: here,
      timeout: 30_000,
      env: { ...process.env, CONFORMANCE_STORE: 'no-lookup' },
    })
    expect(stdout).toMatch(/DedupStore conformance: NoLookupStore under node:test/)
    expect(stdout).toContain(`# tests ${expected}\n`)
    expect(stdout).toMatch(new RegExp(`^# skip(ped)? ${lookups + extends_ + completedBys}$`, 'm'))
    expect(stdout).toContain(`# pass ${expected - lookups - extends_ - completedBys}\n`)
    expect(stdout).toContain('# fail 0\n')
    expect(stdout).toMatch(/^\s*ok \d+ - lookup: answers 'absent' for a key never claimed.* # SKIP not applicable/m)
    expect(stdout).toMatch(/^\s*ok \d+ - extend: refuses a forged token.* # SKIP not applicable/m)
  })
})

describe('MemoryDedupStore beyond the contract', () => {
  it("rejects a new key with DedupStoreError 'full' when every slot is a live claim, and names the fix", async () => {
    const store = new MemoryDedupStore({ maxKeys: 3 })
    for (let i = 0; i < 3; i++) expect((await store.claim(`live-${i}`, LONG)).status).toBe('acquired')
    const error = await store.claim('one-more', LONG).then(
      () => expect.unreachable('a fourth live claim should not fit'),
      (error: unknown) => error,
    )
    expect(error).toBeInstanceOf(DedupStoreError)
    expect((error as DedupStoreError).code).toBe('full')
    expect((error as DedupStoreError).message).toMatch(/MemoryDedupStore is full: all 3 keys are live claims.*Raise maxKeys/)
    // The refused claim evicted nothing: every live claim is still held.
    for (let i = 0; i < 3; i++) expect((await store.claim(`live-${i}`, LONG)).status).toBe('in_flight')
  })

  it('evicts a completed key to make room, so a full store of done keys keeps accepting new ones', async () => {
    const store = new MemoryDedupStore({ maxKeys: 2 })
    for (const key of ['a', 'b']) {
      const result = await store.claim(key, LONG)
      if (result.status === 'acquired') await store.complete(result.claim, LONG)
    }
    expect((await store.claim('c', LONG)).status).toBe('acquired')
    expect(store.size).toBe(2)
  })

  it('when its order marks are full, forgets a batch of the marks renewed longest ago (maxKeys / 100), not one renewed since', async () => {
    let now = 1_000_000
    const store = new MemoryDedupStore({ maxKeys: 300, now: () => now })
    const write = async (email: string, i: number) => {
      const order = { key: email, mark: { createdAtMs: i, eventId: `evt-${i}`, type: 'email.delivered' } }
      const result = await store.claim(`event-${i}`, { ...LONG, order })
      if (result.status !== 'acquired') throw new Error(`event-${i} was ${result.status}`)
      expect(await store.complete(result.claim, { retentionMs: LONG.retentionMs, order })).toBe(true)
    }
    const read = async (email: string) => {
      const probe = { createdAtMs: 0, eventId: 'probe', type: 'email.sent' }
      const result = await store.claim(`probe-${email}`, { ...LONG, order: { key: email, mark: probe } })
      if (result.status !== 'acquired') throw new Error(`probe-${email} was ${result.status}`)
      await store.release(result.claim)
      return result.order?.forgotten ? 'forgotten' : (result.order?.mark?.eventId ?? null)
    }
    for (let i = 0; i < 300; i++) await write(`email-${i}`, i)
    now += 1_000
    await write('email-0', 300) // the oldest mark, renewed
    await write('email-300', 301) // full: a batch of 3 goes
    // The three forgotten marks were live: their claims say so (the receiver's ctx.order is then
    // unknown, mark_evicted), never a plain null that would read as a first event.
    expect(await Promise.all(['email-0', 'email-1', 'email-2', 'email-3', 'email-4', 'email-300', 'never-seen'].map(read))).toEqual([
      'evt-300',
      'forgotten',
      'forgotten',
      'forgotten',
      'evt-4',
      'evt-301',
      null,
    ])
  })

  it('tells a handler ctx.order unknown (mark_evicted), not first, for an email whose live mark a full store forgot', async () => {
    const store = new MemoryDedupStore({ maxKeys: 100 })
    const orders: EventOrder[] = []
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store,
      ordering: true,
      logger: false,
      handlers: { 'email.queued': (_event, ctx) => void orders.push(ctx.order), 'email.submitted': () => {} },
    })
    const first = await createEmailSequence({ types: ['email.queued', 'email.submitted'] })
    expect((await receiver.receive(first.deliveries[1] as SignedDelivery)).status).toBe(200)
    // 100 more emails fill the marks: the first email's mark (the oldest) is forgotten.
    for (let i = 0; i < 100; i++) {
      const other = await createEmailSequence({ types: ['email.submitted'] })
      expect((await receiver.receive(other.deliveries[0] as SignedDelivery)).status).toBe(200)
    }
    expect((await receiver.receive(first.deliveries[0] as SignedDelivery)).status).toBe(200)
    expect(orders).toEqual([{ status: 'unknown', key: `email:${first.emailId}`, newestHandled: null, reason: 'mark_evicted' }])
  })

  it('when full, evicts the oldest expired or completed keys first (a batch of maxKeys / 100), never a live claim', async () => {
    let now = 1_000_000
    const store = new MemoryDedupStore({ maxKeys: 300, now: () => now })
    const states = async (keys: string[]) => Promise.all(keys.map(async (key) => (await store.lookup(key)) as string))
    // The oldest key is a live claim, then a claim whose lease lapses, then 298 completed keys.
    expect((await store.claim('live', LONG)).status).toBe('acquired')
    expect((await store.claim('lapsing', { leaseMs: 10, retentionMs: LONG.retentionMs })).status).toBe('acquired')
    for (let i = 0; i < 298; i++) {
      const result = await store.claim(`done-${i}`, LONG)
      if (result.status === 'acquired') await store.complete(result.claim, LONG)
    }
    now += 1_000
    expect((await store.claim('new', LONG)).status).toBe('acquired')
    // A batch of 3: the lapsed claim and the two oldest completed keys; the live claim stays.
    expect(store.size).toBe(298)
    expect(await states(['live', 'lapsing', 'done-0', 'done-1', 'done-2', 'done-297', 'new'])).toEqual([
      'in_flight',
      'absent',
      'absent',
      'absent',
      'done',
      'done',
      'in_flight',
    ])
  })
})

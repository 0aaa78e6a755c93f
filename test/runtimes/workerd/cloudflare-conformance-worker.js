// Runs the dedup-store and ordering conformance suites inside workerd against
// @email-webhooks/cloudflare: D1DedupStore on the `DB` binding, and DurableObjectDedupStore on the
// EMAIL_WEBHOOK_DEDUP namespace (the EmailWebhookDedupObject class, exported below with two test
// routes: shift its clock, run its alarm), sharded over 16 objects and over 1; and the purges of
// expired rows (D1: by claims; Durable Objects: by the alarm). `GET /?suite=<name>` answers that
// suite's results as JSON.
import { D1DedupStore, DurableObjectDedupStore, EmailWebhookDedupObject } from '@email-webhooks/cloudflare'
import { dedupStoreConformance, orderingConformance } from '@email-webhooks/core/testing'

const HOUR = 3_600_000
/** Who a newer release's stamp names. */
const NEWER_BY = '@email-webhooks/cloudflare 9.1.0'
const LONG = { leaseMs: 60_000, retentionMs: 24 * HOUR }

/** The package's class, with a clock the test can move and a route that runs its alarm now. */
class TestDedupObject extends EmailWebhookDedupObject {
  offset = 0
  constructor(state, env) {
    super(state, env)
    this.state = state
  }
  now() {
    return Date.now() + this.offset
  }
  async fetch(request) {
    const url = new URL(request.url)
    const sql = this.state.storage.sql
    if (url.pathname === '/test/shift') this.offset += Number(url.searchParams.get('ms'))
    else if (url.pathname === '/test/alarm') await this.alarm()
    else if (url.pathname === '/test/stamp')
      return Response.json(sql.exec('SELECT version, written_by FROM email_webhook_dedup_schema').toArray())
    else if (url.pathname === '/test/newer') {
      // A newer release stamped this storage; the package's class, made again over it (as after a deploy), refuses every request.
      sql.exec('UPDATE email_webhook_dedup_schema SET version = 2, written_by = ?', NEWER_BY)
      const reopened = new EmailWebhookDedupObject(this.state)
      const body = JSON.stringify({ op: 'claim', key: 'default:after', leaseMs: 60_000 })
      const answer = await reopened.fetch(new Request('https://object/claim', { method: 'POST', body }))
      const rows = sql.exec(`SELECT count(*) AS n FROM email_webhook_dedup WHERE key = 'default:after'`).toArray()[0].n
      return Response.json({ status: answer.status, body: await answer.json(), rows })
    } else return super.fetch(request)
    const rows = sql.exec('SELECT count(*) AS n FROM email_webhook_dedup').toArray()[0].n
    return Response.json({ rows, alarm: await this.state.storage.getAlarm() })
  }
}

export { TestDedupObject as EmailWebhookDedupObject }

function check(condition, message) {
  if (!condition) throw new Error(message)
}

async function acquired(store, key, opts = LONG) {
  const result = await store.claim(key, opts)
  check(result.status === 'acquired', `claim of ${key} is acquired, got ${JSON.stringify(result)}`)
  return result.claim
}

/** Done (short retention), released and lapsed rows, and one done for a day, made `ageMs` ago on `store`'s clock. */
async function leaveRows(store, tag) {
  const done = await acquired(store, `${tag}:done`)
  await store.complete(done, { retentionMs: 1_000 })
  await store.release(await acquired(store, `${tag}:released`))
  await acquired(store, `${tag}:lapsed`, { leaseMs: 1_000, retentionMs: LONG.retentionMs })
  await store.complete(await acquired(store, `${tag}:kept`), LONG)
}

const PURGES = {
  // D1: every 16th claim's batch deletes rows that expired more than an hour before.
  'd1-purge': async (env) => {
    const tag = `purge:${crypto.randomUUID()}`
    const count = async () =>
      (await env.DB.prepare('SELECT count(*) AS n FROM email_webhook_dedup WHERE key LIKE ?1').bind(`${tag}%`).first()).n
    await leaveRows(new D1DedupStore(env.DB, { now: () => Date.now() - 2 * HOUR }), tag)
    check((await count()) === 4, `four rows before the purge, got ${await count()}`)
    const store = new D1DedupStore(env.DB)
    for (let i = 0; i < 16; i++) await acquired(store, `other:${crypto.randomUUID()}`)
    check((await count()) === 1, `16 claims purged the three expired rows and kept the one done for a day, got ${await count()}`)
    check((await store.lookup(`${tag}:kept`)) === 'done', 'the kept row is still done')
  },
  // Durable Objects: a claim arms the alarm; the alarm deletes rows that expired more than an hour before.
  'do-purge': async (env) => {
    const name = `purge-${crypto.randomUUID()}`
    const store = new DurableObjectDedupStore(env.EMAIL_WEBHOOK_DEDUP, { shards: 1, name })
    const stub = env.EMAIL_WEBHOOK_DEDUP.get(env.EMAIL_WEBHOOK_DEDUP.idFromName(`${name}/0`))
    const test = async (path) => (await stub.fetch(`https://test${path}`)).json()
    await leaveRows(store, 'rows')
    const armed = await test('/test/shift?ms=0')
    check(armed.rows === 4 && typeof armed.alarm === 'number', `four rows and an alarm after the claims, got ${JSON.stringify(armed)}`)
    await test(`/test/shift?ms=${2 * HOUR}`)
    const after = await test('/test/alarm')
    check(after.rows === 1, `the alarm purged the three expired rows and kept the one done for a day, got ${JSON.stringify(after)}`)
    check(typeof after.alarm === 'number', 'and comes back while rows remain')
    check((await store.lookup('rows:kept')) === 'done', 'the kept row is still done')
    check((await store.lookup('rows:done')) === 'absent', 'the purged done row is absent')
  },
}

/** The refusal a store gives for a stamp of version 2 by NEWER_BY. */
function checkNewerRefusal(error) {
  check(error?.code === 'misconfigured', `misconfigured, got ${error?.code}: ${error?.message}`)
  check(error.message.includes(`schema version 2 (written by ${NEWER_BY})`), `names the versions and the writer: ${error.message}`)
  check(
    error.message.includes('knows (up to version 1)') && error.message.includes(`to ${NEWER_BY} or later`),
    `says what to upgrade: ${error.message}`,
  )
}

const SCHEMA = {
  // D1: the tables are stamped version 1 by their maker; a stamp of version 2 is refused before anything is written, createTable or not.
  'd1-schema': async (env) => {
    const table = `schema_${crypto.randomUUID().replaceAll('-', '')}`
    await acquired(new D1DedupStore(env.DB, { table }), 'default:before')
    const stamp = await env.DB.prepare(`SELECT version, written_by FROM ${table}_schema`).all()
    check(stamp.results.length === 1 && stamp.results[0].version === 1, `stamped version 1, got ${JSON.stringify(stamp.results)}`)
    check(
      /^@email-webhooks\/cloudflare \d+\.\d+\.\d+/.test(stamp.results[0].written_by),
      `written by the package, got ${stamp.results[0].written_by}`,
    )
    await env.DB.prepare(`UPDATE ${table}_schema SET version = 2, written_by = ?1`).bind(NEWER_BY).run()
    for (const createTable of [true, false]) {
      let error
      try {
        await new D1DedupStore(env.DB, { table, createTable }).claim('default:after', LONG)
      } catch (caught) {
        error = caught
      }
      checkNewerRefusal(error)
    }
    const rows = await env.DB.prepare(`SELECT key FROM ${table}`).all()
    check(rows.results.length === 1 && rows.results[0].key === 'default:before', `nothing written, got ${JSON.stringify(rows.results)}`)
  },
  // Durable Objects: each object's storage is stamped version 1; made again over a storage stamped 2, the object refuses every request.
  'do-schema': async (env) => {
    const name = `schema-${crypto.randomUUID()}`
    const store = new DurableObjectDedupStore(env.EMAIL_WEBHOOK_DEDUP, { shards: 1, name })
    await acquired(store, 'default:before')
    const stub = env.EMAIL_WEBHOOK_DEDUP.get(env.EMAIL_WEBHOOK_DEDUP.idFromName(`${name}/0`))
    const stamp = await (await stub.fetch('https://test/test/stamp')).json()
    check(stamp.length === 1 && stamp[0].version === 1, `stamped version 1, got ${JSON.stringify(stamp)}`)
    const newer = await (await stub.fetch('https://test/test/newer')).json()
    check(newer.status === 500 && newer.rows === 0, `refused, nothing written: ${JSON.stringify(newer)}`)
    checkNewerRefusal(newer.body.error)
  },
}

/** The short lease and retention of the expiry cases: `?shortMs=` (the test passes 300 ms times TEST_TIME_SCALE), else 300. */
let shortMs = 300

const SUITES = {
  'd1-dedup': (env, register) =>
    dedupStoreConformance('D1DedupStore', register, {
      createStore: () => new D1DedupStore(env.DB),
      closeAfterEach: false,
      checkDurations: true,
      shortMs,
    }),
  'd1-ordering': (env, register) =>
    orderingConformance('D1DedupStore', register, { createStore: () => new D1DedupStore(env.DB), closeAfterEach: false, shortMs }),
  'do-dedup': (env, register) =>
    dedupStoreConformance('DurableObjectDedupStore (16 shards)', register, {
      createStore: () => new DurableObjectDedupStore(env.EMAIL_WEBHOOK_DEDUP),
      closeAfterEach: false,
      checkDurations: true,
      shortMs,
    }),
  'do-dedup-one': (env, register) =>
    dedupStoreConformance('DurableObjectDedupStore (1 shard)', register, {
      createStore: () => new DurableObjectDedupStore(env.EMAIL_WEBHOOK_DEDUP, { shards: 1, name: 'one' }),
      closeAfterEach: false,
      checkDurations: true,
      shortMs,
    }),
  'do-ordering-one': (env, register) =>
    orderingConformance('DurableObjectDedupStore (1 shard)', register, {
      createStore: () => new DurableObjectDedupStore(env.EMAIL_WEBHOOK_DEDUP, { shards: 1, name: 'one' }),
      closeAfterEach: false,
      shortMs,
    }),
  'do-ordering-sharded': (env, register) =>
    orderingConformance('DurableObjectDedupStore (16 shards)', register, {
      createStore: () => new DurableObjectDedupStore(env.EMAIL_WEBHOOK_DEDUP),
      closeAfterEach: false,
      expectCapability: false,
      shortMs,
    }),
}

for (const [name, run] of Object.entries(SCHEMA)) {
  SUITES[name] = (env, register) => register.it(`stamps and refuses a newer schema (${name})`, () => run(env))
}
for (const [name, run] of Object.entries(PURGES)) {
  SUITES[name] = (env, register) => register.it(`purges expired rows (${name})`, () => run(env))
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    const suite = SUITES[url.searchParams.get('suite')]
    shortMs = Number(url.searchParams.get('shortMs') ?? 300)
    if (!suite) return Response.json({ suites: Object.keys(SUITES) }, { status: 404 })
    const tests = []
    suite(env, { describe: (_name, fn) => fn(), it: (name, fn) => void tests.push({ name, fn }) })
    const results = []
    for (const test of tests) {
      let skipped
      try {
        await test.fn({ skip: (reason) => (skipped = reason) })
        results.push({ name: test.name, ok: true, skipped })
      } catch (error) {
        results.push({ name: test.name, ok: false, error: String(error) })
      }
    }
    return Response.json(results)
  },
}

// The hand-written baselines (bench/src/hand) are correct receivers, on each framework and store:
// a bad signature is refused (401), so is a stale or future timestamp, a body that is not JSON is
// refused (400), a duplicate is answered 200 without running the handler again (copies sent at
// once included), and a 2xx leaves only once the record exists: the test reads the database right
// after each answer. Servers run as the bench runs them (bench/src/server.js over IPC), on a
// PostgreSQL and a Redis started by the bench's own services.js.
import { type ChildProcess, spawn } from 'node:child_process'
import { createHmac, randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import Redis from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BENCH_SECRET, eventBody } from '../src/payloads.js'
import { lazyServices } from '../src/services.js'

const SERVER = join(import.meta.dirname, '..', 'src', 'server.js')
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-bench-hand-'))
const services = lazyServices()
let postgresUrl = ''
let redisUrl = ''
let pgClient: pg.Client
let redis: Redis

beforeAll(async () => {
  const [postgres, redisServer] = await Promise.all([services.get('postgres'), services.get('redis')])
  postgresUrl = postgres.url
  redisUrl = redisServer.url
  pgClient = new pg.Client({ connectionString: postgresUrl })
  await pgClient.connect()
  redis = new Redis(redisUrl)
}, 90_000)
afterAll(async () => {
  await pgClient?.end()
  redis?.disconnect()
  await services.stopAll()
  rmSync(dir, { recursive: true, force: true })
})

/** A delivery signed as the sender signs it (payloads.js), at `timestamp` (seconds). */
function delivery(id = randomUUID(), timestamp = Math.floor(Date.now() / 1000), secret = BENCH_SECRET, body = eventBody(id, 1024)) {
  const signature = createHmac('sha256', secret).update(`${id}.${timestamp}.`).update(body).digest('hex')
  return {
    id,
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signature,
    },
    body,
  }
}

interface Server {
  child: ChildProcess
  port: number
  db: string
}
async function startServer(framework: string, mode: string): Promise<Server> {
  const db = join(dir, `${framework}-${mode}.db`)
  const child = spawn(process.execPath, [SERVER, framework, mode], {
    env: { ...process.env, EMAIL_WEBHOOKS_DB: db, BENCH_POSTGRES_URL: postgresUrl, BENCH_REDIS_URL: redisUrl },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  })
  const [ready] = await once(child, 'message')
  return { child, port: ready.port, db }
}
async function handledBy(server: Server): Promise<number> {
  const reply = once(server.child, 'message')
  server.child.send({ type: 'mark' })
  return (await reply)[0].handled
}
async function post(server: Server, d: ReturnType<typeof delivery>) {
  const response = await fetch(`http://127.0.0.1:${server.port}/hooks`, { method: 'POST', headers: d.headers, body: d.body })
  return { status: response.status, body: await response.text() }
}

/** Whether the store holds the record of `id`, read from outside the server. */
async function recorded(store: string, server: Server, id: string): Promise<boolean> {
  if (store === 'sqlite') {
    const db = new Database(server.db, { readonly: true })
    try {
      return db.prepare('SELECT 1 FROM hand_seen WHERE id = ?').get(id) !== undefined
    } finally {
      db.close()
    }
  }
  if (store === 'postgres') return ((await pgClient.query('SELECT 1 FROM hand_seen WHERE id = $1', [id])).rowCount ?? 0) > 0
  if (store === 'redis') return (await redis.get(`hand:${id}`)) !== null
  return true // the memory store lives in the server: the duplicate answers below prove it
}

for (const framework of ['hono', 'express']) {
  for (const store of ['memory', 'sqlite', 'postgres', 'redis']) {
    describe(`hand-written ${framework} + ${store}`, () => {
      let server: Server
      beforeAll(async () => {
        server = await startServer(framework, `hand-${store}`)
      }, 30_000)
      afterAll(() => {
        server?.child.kill()
      })

      it('refuses a bad signature, a stale or future timestamp and a body that is not JSON, running nothing', async () => {
        const wrongSecret = delivery(undefined, undefined, 'whsec_not_the_secret')
        expect((await post(server, wrongSecret)).status).toBe(401)
        const tampered = delivery()
        tampered.body = Buffer.from(tampered.body.toString().replace('shipped', 'Shipped'))
        expect((await post(server, tampered)).status).toBe(401)
        const noSignature = delivery()
        noSignature.headers['webhook-signature'] = ''
        expect((await post(server, noSignature)).status).toBe(401)
        // 10 s past the window's edges: a second or two of a loaded machine between here and the
        // server's clock reading must not move a timestamp back inside.
        const now = Math.floor(Date.now() / 1000)
        expect((await post(server, delivery(undefined, now - 310))).status).toBe(401)
        expect((await post(server, delivery(undefined, now + 310))).status).toBe(401)
        expect((await post(server, delivery(undefined, now - 290))).status).toBe(200)
        expect((await post(server, delivery(undefined, undefined, undefined, Buffer.from('{not json')))).status).toBe(400)
        expect(await handledBy(server)).toBe(1)
      })

      it('answers 2xx only once the record exists, and runs a duplicate never again', async () => {
        const before = await handledBy(server)
        for (let i = 0; i < 5; i++) {
          const d = delivery()
          const first = await post(server, d)
          expect(first.status).toBe(200)
          expect(await recorded(store, server, d.id), `record of ${d.id} right after the 2xx`).toBe(true)
          const again = await post(server, d)
          expect(again).toEqual({ status: 200, body: '{"ok":true,"duplicate":true}' })
        }
        expect(await handledBy(server)).toBe(before + 5)
      })

      it('runs an event once when its copies arrive at once', async () => {
        const before = await handledBy(server)
        const d = delivery()
        const answers = await Promise.all(Array.from({ length: 8 }, () => post(server, d)))
        expect(answers.every((a) => a.status === 200 || a.status === 409)).toBe(true)
        expect(answers.some((a) => a.status === 200)).toBe(true)
        expect(await handledBy(server)).toBe(before + 1)
        expect(await recorded(store, server, d.id)).toBe(true)
      })
    })
  }
}

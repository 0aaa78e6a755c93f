/**
 * `email-webhooks endpoint recover` against the faithful sender on 127.0.0.1: the dedup store it
 * consults (the receiver's SQLite file opened read-only, EMAIL_WEBHOOKS_DB or the default path,
 * PostgreSQL or Redis with --store, or none, said so), its exit codes (a failed retry and a
 * truncated list are 1, also with --json; Ctrl-C is 130 with the report so far) and what it says
 * recover cannot bring back.
 */
import { existsSync, mkdirSync, statSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { DedupStore } from '@email-webhooks/core'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createFaithfulSender, type FaithfulSender, listenSender, type SenderListener } from '@email-webhooks/core/testing'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { sharedPostgres, sharedRedis, type TestServer } from '../../../test/services/servers.js'
import { runCli } from './helpers/cli.js'

const KEY = `ek_cli_${crypto.randomUUID().replaceAll('-', '')}`
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
let dir: string
const closers: Array<() => unknown> = []

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cli-recover-'))
})
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})
afterAll(() => rm(dir, { recursive: true, force: true }))

/** A sender whose endpoint holds `count` failed deliveries (one attempt each, the endpoint stays enabled), its API on 127.0.0.1. */
async function failedDeliveries(
  count: number,
  payloadLifetimeMs?: number,
): Promise<{ sender: FaithfulSender; api: SenderListener; endpointId: string; events: string[] }> {
  const sender = createFaithfulSender({
    apiKeys: { [KEY]: ['webhooks:manage'] },
    ...(payloadLifetimeMs === undefined ? {} : { payloadLifetimeMs }),
    maxAttempts: 1,
    disableAfter: 1_000,
    fetch: async () => new Response('{}', { status: 500 }),
  })
  const api = await listenSender(sender)
  closers.push(
    () => sender.close(),
    () => api.close(),
  )
  const { id: endpointId } = sender.createEndpoint('https://hooks.example.com/email')
  const events = Array.from({ length: count }, () => sender.emit({ type: 'email.bounced' }).event.id)
  await sender.idle()
  return { sender, api, endpointId, events }
}

/** Records `eventIds` as handled in `store`, as the receiver does. */
async function markDone(store: DedupStore, eventIds: string[]): Promise<void> {
  for (const id of eventIds) {
    const claim = await store.claim(`default:${id}`, LONG)
    if (claim.status !== 'acquired') throw new Error(`could not claim ${id}`)
    await store.complete(claim.claim, LONG)
  }
}

async function recover(api: SenderListener, args: string[], options: { env?: Record<string, string>; cwd?: string } = {}) {
  const result = await runCli(['endpoint', 'recover', ...args], {
    env: { EMAIL_API_KEY: KEY, EMAIL_API_URL: api.baseUrl, ...options.env },
    cwd: options.cwd ?? dir,
  })
  expect(result.stdout + result.stderr).not.toContain(KEY)
  return result
}

describe('endpoint recover: the dedup store it consults', () => {
  it("opens --db read-only beside a running receiver's store: skips what it handled, names the file, leaves its WAL alone", async () => {
    const { api, endpointId, events } = await failedDeliveries(3)
    const path = join(dir, 'live.db')
    const live = new SqliteDedupStore({ path })
    closers.push(() => live.close())
    await markDone(live, events.slice(0, 2))
    const wal = statSync(`${path}-wal`).size
    const result = await recover(api, [endpointId, '--dry-run', '--db', path])
    // Main opened the file read-write and checkpointed it with TRUNCATE on close, under the running receiver.
    expect(statSync(`${path}-wal`).size).toBe(wal)
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toContain(`Dedup store consulted: SQLite file ${path} (read-only, from --db)`)
    expect(result.stdout).toMatch(/1 would retry, 2 already handled/)
    expect(result.stdout.match(/handled \(store\)/g)).toHaveLength(2)
  })

  it('refuses a --db path that does not exist (exit 2), and creates no file there', async () => {
    const { api, endpointId } = await failedDeliveries(1)
    const path = join(dir, 'dedpu.db')
    const result = await recover(api, [endpointId, '--dry-run', '--db', path])
    expect([result.code, result.stdout]).toEqual([2, ''])
    expect(result.stderr).toContain(`no SQLite file at ${path}`)
    expect(existsSync(path)).toBe(false)
  })

  it('reads EMAIL_WEBHOOKS_DB, else the default ./.email-webhooks/dedup.db when it exists, else says no store was consulted', async () => {
    const { api, endpointId, events } = await failedDeliveries(2)
    const fromEnv = join(dir, 'env.db')
    const envStore = new SqliteDedupStore({ path: fromEnv })
    await markDone(envStore, events.slice(0, 1))
    await envStore.close()
    const viaEnv = await recover(api, [endpointId, '--dry-run'], { env: { EMAIL_WEBHOOKS_DB: fromEnv } })
    expect(viaEnv.stdout).toContain(`Dedup store consulted: SQLite file ${fromEnv} (read-only, from EMAIL_WEBHOOKS_DB)`)
    expect(viaEnv.stdout).toMatch(/1 would retry, 1 already handled/)

    const app = join(dir, 'app')
    mkdirSync(join(app, '.email-webhooks'), { recursive: true })
    const defaultStore = new SqliteDedupStore({ path: join(app, '.email-webhooks/dedup.db') })
    await markDone(defaultStore, events)
    await defaultStore.close()
    const viaDefault = await recover(api, [endpointId, '--dry-run'], { cwd: app })
    expect(viaDefault.stdout).toContain(`SQLite file ${join(app, '.email-webhooks/dedup.db')} (read-only, from the default path`)
    expect(viaDefault.stdout).toMatch(/0 would retry, 2 already handled/)

    const empty = join(dir, 'empty')
    mkdirSync(empty)
    const none = await recover(api, [endpointId, '--dry-run'], { cwd: empty })
    expect(none.stdout).toContain(
      `Dedup store not consulted: no --db or --store, EMAIL_WEBHOOKS_DB unset, and no file at ${join(empty, '.email-webhooks/dedup.db')}`,
    )
    expect(none.stdout).toMatch(/2 would retry, 0 already handled/)
    expect(JSON.parse((await recover(api, [endpointId, '--dry-run', '--json'], { cwd: empty })).stdout).store).toBeNull()
    // Four CLI runs one after the other: the 30 s default was passed at a load average of 21.
  }, 60_000)

  describe('with --store', () => {
    let postgres: TestServer
    let redis: TestServer
    beforeAll(async () => {
      ;[postgres, redis] = await Promise.all([sharedPostgres(), sharedRedis()])
    }, 120_000)
    afterAll(() => Promise.all([postgres?.stop(), redis?.stop()]))

    // Each runs the CLI three times: a minute leaves room on a loaded machine.
    it.each(['postgres', 'redis'] as const)(
      'looks events up in %s, shown without the password',
      async (kind) => {
        const server = kind === 'postgres' ? postgres : redis
        const { api, endpointId, events } = await failedDeliveries(3)
        const store =
          kind === 'postgres'
            ? new PostgresDedupStore({ connectionString: server.url })
            : new RedisDedupStore({ url: server.url, checkDurability: false })
        closers.push(() => store.close())
        await markDone(store, events.slice(0, 2))
        const result = await recover(api, [endpointId, '--dry-run', '--store', server.url])
        expect(result.code, result.stderr).toBe(0)
        expect(result.stdout).toMatch(/1 would retry, 2 already handled/)
        expect(result.stdout).toContain(
          `Dedup store consulted: ${kind === 'postgres' ? 'PostgreSQL' : 'Redis'} at 127.0.0.1:${server.port}`,
        )
        expect(result.stdout + result.stderr).not.toContain(server.password)
        const json = JSON.parse((await recover(api, [endpointId, '--dry-run', '--json', '--store', server.url])).stdout)
        expect(json.store).toEqual({ kind, location: expect.stringMatching(new RegExp(`^127\\.0\\.0\\.1:${server.port}`)) })
        const both = await recover(api, [endpointId, '--db', join(dir, 'x.db'), '--store', server.url])
        expect([both.code, both.stderr]).toEqual([
          2,
          expect.stringContaining(
            "option '--db <path>' cannot be used with option '--store <url>': give --db (a SQLite file) or --store (a PostgreSQL or Redis URL), not both.",
          ),
        ])
      },
      60_000,
    )
  })
})

describe('endpoint recover: exit codes and what it cannot bring back', () => {
  it('exits 1 with --json when a retry failed, as the text output does', async () => {
    const { sender, api, endpointId } = await failedDeliveries(1)
    // List endpoints and deliveries normally; the retry is refused.
    sender.injectApiFaults({}, {}, { status: 403, code: 'key_owner_unavailable' })
    const result = await recover(api, [endpointId, '--json', '--spacing-ms', '0'], { cwd: dir })
    expect(result.code).toBe(1)
    expect(JSON.parse(result.stdout).failed).toEqual([expect.objectContaining({ status: 403, code: 'key_owner_unavailable' })])
  })

  it('exits 1 when the list held 100 records, and says that running it again cannot reach the rest', async () => {
    const { api, endpointId } = await failedDeliveries(101)
    for (const args of [['--dry-run'], ['--dry-run', '--json']]) {
      const result = await recover(api, [endpointId, ...args])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain('listed 100 deliveries, its maximum')
      expect(result.stderr).toContain('running recover again lists the same ones')
      expect(result.stderr).toContain(
        "For the events not listed, bring them back from each email's own event list with `email-webhooks emails reconcile <receiver-url> --ids <file of email ids>`",
      )
      expect(result.stderr).not.toMatch(/Run recover again after/)
    }
  })

  it('says that events emitted while the endpoint was disabled are not listed, and where to go for them', async () => {
    const { api, endpointId } = await failedDeliveries(1)
    const result = await recover(api, [endpointId, '--dry-run'])
    expect(result.stdout).toContain(
      "Note: events emitted while the endpoint was disabled are not listed (the service makes no delivery record for them), so recover cannot retry them; bring them back from each email's own event list with `email-webhooks emails reconcile <receiver-url> --ids <file of email ids>` (reconcileEmails() in @email-webhooks/core/api; key scope emails:read, the receiver needs ordering: true).",
    )
    expect(JSON.parse((await recover(api, [endpointId, '--dry-run', '--json'])).stdout).notListed).toContain(
      'email-webhooks emails reconcile',
    )
  })

  it('says how to reconcile the events of expired deliveries', async () => {
    const { api, endpointId } = await failedDeliveries(2, 0)
    await new Promise((resolve) => setTimeout(resolve, 5))
    const result = await recover(api, [endpointId, '--spacing-ms', '0'])
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toMatch(/0 retried, 0 already handled, 2 expired/)
    expect(result.stdout).toContain(
      "2 deliveries expired (404 delivery_expired): the service can no longer send them; bring them back from each email's own event list with `email-webhooks emails reconcile",
    )
  })

  it('stops on Ctrl-C: no retry starts after it, the report so far is printed, exit 130', async () => {
    const { sender, api, endpointId } = await failedDeliveries(6)
    const retries = () => sender.apiRequests.filter((r) => r.path.endsWith('/retry'))
    let interruptedAt = -1
    // Retries 5 s apart: the next one cannot start before the Ctrl-C lands, even on a loaded machine
    // (the run is interrupted after the first, so the spacing adds no time).
    const result = await runCli(['endpoint', 'recover', endpointId, '--spacing-ms', '5000', '--concurrency', '1'], {
      env: { EMAIL_API_KEY: KEY, EMAIL_API_URL: api.baseUrl },
      cwd: dir,
      onSpawn: (child) => {
        const started = Date.now()
        const poll = setInterval(() => {
          if (retries().length >= 1 || Date.now() - started > 20_000) {
            clearInterval(poll)
            interruptedAt = retries().length
            child.kill('SIGINT')
          }
        }, 10)
      },
    })
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect([result.signal, result.code]).toEqual([null, 130])
    expect(retries()).toHaveLength(interruptedAt)
    const [, retried, inFlight, notStarted] = (
      result.stdout.match(
        /^Interrupted: endpoint was enabled; (\d+) retried, (\d+) interrupted in flight \(the service may have requeued them\), (\d+) not started/,
      ) ?? []
    ).map(Number)
    expect([(retried as number) + (inFlight as number), notStarted]).toEqual([interruptedAt, 6 - interruptedAt])
    expect(result.stderr).toContain('interrupted; run recover again to finish')
  })
})

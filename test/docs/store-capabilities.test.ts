/**
 * What the docs say each store supports, checked against the stores themselves: each built-in
 * store is built (against addresses nothing listens on, or stand-in bindings: nothing is called)
 * and asked what it has (`lookup`, `extend`, `ordering`, `inbox`). The Stores page's table must be
 * that table, row for row; the claims elsewhere (the ordering and inbox sentences of the Ordering
 * and Inbox mode pages, the command line guide's stores with an inbox and the CLI's own message)
 * must agree with it; and so must the console page's list of the adapters that mount the console.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { D1DedupStore, DurableObjectDedupStore } from '@email-webhooks/cloudflare'
import { type DedupStore, MemoryDedupStore } from '@email-webhooks/core'
import { DenoKvDedupStore } from '@email-webhooks/core/deno-kv'
import { DynamoDBDedupStore } from '@email-webhooks/core/dynamodb'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import * as express from '@email-webhooks/express'
import * as fastify from '@email-webhooks/fastify'
import * as hono from '@email-webhooks/hono'
import * as koa from '@email-webhooks/koa'
import * as lambda from '@email-webhooks/lambda'
import { afterAll, describe, expect, it } from 'vitest'
import { STORES_WITH_INBOX } from '../../packages/cli/src/lib/inbox-store.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const read = (doc: string): string => readFileSync(join(ROOT, doc), 'utf8')
/** A page's text with its line breaks as spaces: sentences wrap. */
const prose = (doc: string): string => read(doc).replace(/\s+/g, ' ')
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-capabilities-'))
const stub = () => {
  throw new Error('not called')
}

interface Row {
  store: string
  from: string
  build: () => DedupStore
  /** Its ordering depends on an option: the README says when it has it. */
  orderingWhen?: { build: () => DedupStore; says: string }
}

const ROWS: Row[] = [
  { store: 'MemoryDedupStore', from: '@email-webhooks/core', build: () => new MemoryDedupStore() },
  { store: 'SqliteDedupStore', from: '@email-webhooks/core/sqlite', build: () => new SqliteDedupStore({ path: join(dir, 'dedup.db') }) },
  {
    store: 'PostgresDedupStore',
    from: '@email-webhooks/core/postgres',
    build: () => new PostgresDedupStore({ connectionString: 'postgres://app@127.0.0.1:1/app' }),
  },
  { store: 'RedisDedupStore', from: '@email-webhooks/core/redis', build: () => new RedisDedupStore({ url: 'redis://127.0.0.1:1/0' }) },
  {
    store: 'DynamoDBDedupStore',
    from: '@email-webhooks/core/dynamodb',
    build: () => new DynamoDBDedupStore({ table: 'dedup', region: 'us-east-1' }),
  },
  {
    store: 'DenoKvDedupStore',
    from: '@email-webhooks/core/deno-kv',
    build: () => new DenoKvDedupStore({ get: stub, atomic: stub } as never),
  },
  {
    store: 'DurableObjectDedupStore',
    from: '@email-webhooks/cloudflare',
    build: () => new DurableObjectDedupStore({ idFromName: stub, get: stub } as never),
    orderingWhen: {
      build: () => new DurableObjectDedupStore({ idFromName: stub, get: stub } as never, { shards: 1 }),
      says: 'with `shards: 1`',
    },
  },
  { store: 'D1DedupStore', from: '@email-webhooks/cloudflare', build: () => new D1DedupStore({ prepare: stub, batch: stub } as never) },
]

const built: DedupStore[] = []
function facts(row: Row): { lookup: boolean; extend: boolean; ordering: string; inbox: boolean } {
  const store = row.build()
  built.push(store)
  const yes = (b: boolean): string => (b ? 'yes' : 'no')
  let ordering = yes(store.ordering === true)
  if (store.ordering !== true && row.orderingWhen) {
    const other = row.orderingWhen.build()
    built.push(other)
    if (other.ordering === true) ordering = row.orderingWhen.says
  }
  return {
    lookup: typeof store.lookup === 'function',
    extend: typeof store.extend === 'function',
    ordering,
    inbox: store.inbox !== undefined,
  }
}
const FACTS = new Map(ROWS.map((row) => [row.store, facts(row)]))
const named = (predicate: (f: ReturnType<typeof facts>) => boolean): string[] =>
  [...FACTS].filter(([, f]) => predicate(f)).map(([store]) => store)

afterAll(async () => {
  for (const store of built) await store.close?.()
  rmSync(dir, { recursive: true, force: true })
})

/** The rows of the markdown table whose header starts with `first`, as trimmed cells. */
function table(doc: string, first: string): string[][] {
  const lines = read(doc).split('\n')
  const start = lines.findIndex((line) => line.startsWith(`| ${first} `))
  const rows: string[][] = []
  for (let i = start + 2; i < lines.length && lines[i]?.startsWith('|'); i++) {
    rows.push(
      (lines[i] as string)
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    )
  }
  return rows
}

describe('what the docs say each store supports', () => {
  it("is the Stores page's table, read from the stores", () => {
    const yes = (b: boolean): string => (b ? 'yes' : 'no')
    const expected = ROWS.map((row) => {
      const f = FACTS.get(row.store)
      if (!f) throw new Error(row.store)
      return [`\`${row.store}\``, `\`${row.from}\``, yes(f.lookup), yes(f.extend), f.ordering, yes(f.inbox)]
    })
    expect(table('docs/guides/stores.md', 'Store')).toEqual(expected)
  })

  it('agrees with the Ordering and Inbox mode pages: which stores keep order marks, and which have an inbox', () => {
    expect(prose('docs/concepts/ordering.md')).toContain(
      "Every built-in store on a server (SQLite, PostgreSQL, Redis) and the D1 store keep the marks atomically with the event's record; DynamoDB, Deno KV and sharded Durable Objects keep none",
    )
    expect(named((f) => f.ordering === 'yes')).toEqual([
      'MemoryDedupStore',
      'SqliteDedupStore',
      'PostgresDedupStore',
      'RedisDedupStore',
      'D1DedupStore',
    ])
    expect(FACTS.get('DurableObjectDedupStore')?.ordering).toBe('with `shards: 1`')
    expect(prose('docs/concepts/inbox-mode.md')).toContain("committed to the store's inbox (SQLite, PostgreSQL, Redis)")
    expect(named((f) => f.inbox)).toEqual(['MemoryDedupStore', 'SqliteDedupStore', 'PostgresDedupStore', 'RedisDedupStore'])
    // Every store can tell recovery what it handled.
    expect(named((f) => !f.lookup)).toEqual([])
  })

  it('agrees with the command line guide and the CLI’s own message: the inbox commands work on SQLite, PostgreSQL and Redis', () => {
    const cli = prose('docs/guides/cli.md')
    expect(cli).toContain('in this version that is SQLite, PostgreSQL and Redis (and the memory store')
    expect(cli).not.toMatch(/that is SQLite \(and the memory store/)
    expect(STORES_WITH_INBOX).toMatch(/^SQLite .*PostgreSQL and Redis/)
    for (const store of ['SqliteDedupStore', 'PostgresDedupStore', 'RedisDedupStore'])
      expect([store, FACTS.get(store)?.inbox]).toEqual([store, true])
  })
})

describe('what the docs say each adapter supports', () => {
  it('names exactly the adapters that mount the console', () => {
    const adapters = { express, hono, fastify, koa, lambda }
    const mounting = Object.entries(adapters)
      .filter(([, exports]) => 'emailWebhookConsole' in exports)
      .map(([name]) => name)
    expect(mounting).toEqual(['express', 'hono', 'fastify', 'koa'])
    expect(prose('docs/console.md')).toContain(
      `Each adapter mounts it in one line (\`emailWebhookConsole\` from \`@email-webhooks/${mounting[0]}\`, ${mounting
        .slice(1)
        .map((name) => `\`${name}\``)
        .join(', ')})`,
    )
  })
})

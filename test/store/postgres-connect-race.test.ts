/**
 * A PostgreSQL backend that had just started when `pg_ctl stop -m fast` came sends ReadyForQuery
 * and FATAL 57P01 in one read: the store's call fails, and the process lives on (it used to die of
 * an unhandled 'error' on the pg Client, handed out of the pool between pg-pool's listener and the
 * store's). A fake server sends both in one write; the store runs in a child process.
 */
import { execFile } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'

const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'postgres-connect-race-child.mjs')

it.each([
  ['its own pool', 'own'],
  ['a pg.Pool of the app’s', 'given'],
])(
  'a connection terminated in the read that made it ready fails the call, not the process (%s)',
  async (_name, which) => {
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, [CHILD, which], { timeout: 20_000 }, (_error, stdout, stderr) =>
        resolve({ code: child.exitCode, stdout, stderr }),
      )
    })
    expect(stderr).not.toMatch(/Unhandled 'error' event/)
    expect(code).toBe(0)
    expect(stdout.trim()).toBe('rejected connection_failed')
  },
  30_000,
)

it('adds its listener once to a pg.Pool shared by many stores', async () => {
  const { PostgresDedupStore } = await import('@email-webhooks/core/postgres')
  const { default: pg } = await import('pg')
  const pool = new pg.Pool({ connectionString: 'postgres://u:p@127.0.0.1:1/db' })
  const before = pool.listenerCount('connect')
  const stores = Array.from({ length: 12 }, () => new PostgresDedupStore({ pool }))
  expect(pool.listenerCount('connect')).toBe(before + 1)
  await Promise.all(stores.map((store) => store.close()))
  await pool.end()
})

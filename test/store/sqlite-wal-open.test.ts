/**
 * The durable SQLite store syncs its WAL through a file handle of its own. When that handle
 * cannot be opened (here: the second open of the -wal file fails with EMFILE, injected by strace),
 * the store refuses at construction with a DedupStoreError, instead of going on without its WAL
 * sync. A WAL that does not exist (SQLite could not turn WAL on) still means: sync every commit.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { straceAvailable } from './strace.js'

const available = straceAvailable

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'email-webhooks-wal-open-')))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const CHILD = join(import.meta.dirname, 'sqlite-open-child.mjs')

function open(path: string, inject: string[]): { opened: boolean; name?: string; code?: string; message?: string } {
  const result = spawnSync(
    'strace',
    ['-f', '-qq', '-o', '/dev/null', '-P', `${path}-wal`, '-e', 'trace=openat', ...inject, process.execPath, CHILD, path],
    {
      encoding: 'utf8',
      timeout: 30_000,
    },
  )
  const line = result.stdout.trim().split('\n').pop() ?? ''
  if (!line.startsWith('{')) throw new Error(`the child printed no result (exit ${result.status}): ${result.stderr}`)
  return JSON.parse(line)
}

describe.skipIf(!available)('SqliteDedupStore when its own handle on the WAL cannot be opened', () => {
  it('opens normally without a fault (the check below is the injected one)', () => {
    expect(open(join(dir, 'plain.db'), [])).toEqual({ opened: true })
  })

  it('refuses at construction with DedupStoreError misconfigured naming the -wal file and the OS error', () => {
    const path = join(dir, 'fault.db')
    const result = open(path, ['-e', 'inject=openat:error=EMFILE:when=2'])
    expect(result).toMatchObject({ opened: false, name: 'DedupStoreError', code: 'misconfigured' })
    expect(result.message).toContain(`${path}-wal`)
    expect(result.message).toContain('EMFILE')
  })
})

/**
 * scripts/services.mjs, the test command's check of PostgreSQL, Redis and strace: a PostgreSQL
 * that is already there but cannot run stops the command with what to do, before any store test
 * fails on it.
 */
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

const SERVICES = pathToFileURL(resolve(import.meta.dirname, '../../scripts/services.mjs')).href
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-services-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function program(name: string, body: string): void {
  const path = join(dir, name)
  writeFileSync(path, `#!/bin/sh\n${body}\n`)
  chmodSync(path, 0o755)
}

describe('ensureServices', () => {
  it('stops with what to do when the PostgreSQL it finds is installed but cannot run', () => {
    program('initdb', 'exit 0')
    program('postgres', 'echo "error while loading shared libraries: libicuuc.so.72" >&2; exit 127')
    const result = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', `(await import(${JSON.stringify(SERVICES)})).ensureServices()`],
      {
        env: { ...process.env, EMAIL_WEBHOOKS_PG_BIN: dir },
        encoding: 'utf8',
        timeout: 30_000,
      },
    )
    expect(result.status).toBe(1)
    expect(result.stderr).toContain(`PostgreSQL cannot run here: \`${join(dir, 'postgres')} --version\` failed (exit 127)`)
    expect(result.stderr).toContain('libicuuc.so.72')
    expect(result.stderr).toContain('EMAIL_WEBHOOKS_PG_BIN=<dir with initdb>')
  })
})

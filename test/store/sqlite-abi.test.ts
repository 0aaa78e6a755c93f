/**
 * better-sqlite3 built for another Node.js version fails on the first `new Database()` with
 * ERR_DLOPEN_FAILED: the store must say the driver does not fit this Node (`driver_missing`, with
 * `npm rebuild better-sqlite3`), not that the file's folder is unwritable. A child process loads a
 * stand-in better-sqlite3 that fails that way (a `--require` preload resolves the name to it).
 */
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, expect, it } from 'vitest'

const here = dirname(fileURLToPath(import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-abi-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const FAKE_DLOPEN = `module.exports = class Database {
  constructor() {
    const error = new Error("The module '/x/better_sqlite3.node'\\nwas compiled against a different Node.js version using\\nNODE_MODULE_VERSION 115. This version of Node.js requires\\nNODE_MODULE_VERSION 127.")
    error.code = 'ERR_DLOPEN_FAILED'
    throw error
  }
}
`

it('answers driver_missing with `npm rebuild better-sqlite3` when its native module was built for another Node.js', async () => {
  const fake = join(dir, 'fake-better-sqlite3')
  mkdirSync(join(fake, 'lib'), { recursive: true })
  writeFileSync(join(fake, 'package.json'), JSON.stringify({ name: 'better-sqlite3', main: 'lib/index.js' }))
  writeFileSync(join(fake, 'lib/index.js'), FAKE_DLOPEN)
  const preload = join(dir, 'fake-driver.cjs')
  writeFileSync(
    preload,
    `const Module = require('node:module')
const resolve = Module._resolveFilename
Module._resolveFilename = function (request, ...rest) {
  return request === 'better-sqlite3' ? ${JSON.stringify(join(fake, 'lib/index.js'))} : resolve.call(this, request, ...rest)
}
`,
  )
  const script = [
    "const { SqliteDedupStore } = await import('@email-webhooks/core/sqlite')",
    "const { DedupStoreError } = await import('@email-webhooks/core')",
    `try { new SqliteDedupStore({ path: ${JSON.stringify(join(dir, 'dedup.db'))} }); console.log('opened') }`,
    'catch (error) { console.log(JSON.stringify({ code: error.code, message: error.message, typed: error instanceof DedupStoreError })) }',
  ].join('\n')
  const { stdout } = await promisify(execFile)(process.execPath, ['--require', preload, '--input-type=module', '-e', script], {
    cwd: here,
    timeout: 20_000,
  })
  const result = JSON.parse(stdout.trim()) as { code: string; message: string; typed: boolean }
  expect(result).toMatchObject({ code: 'driver_missing', typed: true })
  expect(result.message).toMatch(/npm rebuild better-sqlite3/)
  expect(result.message).toMatch(/NODE_MODULE_VERSION 115/)
  expect(result.message).not.toMatch(/folder|writable/)
})

// bench/profile/server.mjs: every variant starts, answers signed deliveries with 200, and prints
// its CPU per request on SIGINT; load.mjs sends exactly the count it is given. No speed is asserted.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

const PROFILE = join(import.meta.dirname, '..', 'profile')
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-bench-profile-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function start(variant: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [join(PROFILE, 'server.mjs'), variant], {
    env: { ...process.env, EMAIL_WEBHOOKS_DB: join(dir, `${variant}.db`) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${variant} did not start within 20 s`)), 20_000)
    child.stdout?.once('data', (data: Buffer) => {
      clearTimeout(timer)
      resolve({ child, port: Number(data.toString().trim()) })
    })
    child.once('exit', (code) => reject(new Error(`${variant} exited ${code}`)))
  })
}

function stop(child: ChildProcess): Promise<string> {
  let stderr = ''
  child.stderr?.on('data', (data: Buffer) => {
    stderr += data.toString()
  })
  // 'close', not 'exit': the child's last stderr may still be in flight when it exits (a loaded machine showed it).
  return new Promise((resolve) => {
    child.once('close', () => resolve(stderr))
    child.kill('SIGINT')
  })
}

describe('bench/profile', () => {
  for (const variant of ['bare', 'verify', 'parse', 'store', 'memory', 'sqlite', 'hand', 'hand-sqlite']) {
    it(`${variant}: 200 to every distinct signed delivery, CPU per request on SIGINT`, async () => {
      const { child, port } = await start(variant)
      const load = spawnSync(process.execPath, [join(PROFILE, 'load.mjs'), String(port), '300'], { encoding: 'utf8', timeout: 30_000 })
      const report = await stop(child)
      expect(load.stdout).toMatch(/^300 requests, \d+\/s, non-2xx 0, errors 0$/m)
      expect(report).toMatch(new RegExp(`^${variant}\\s+300 requests, CPU µs/request [\\d.]+ \\(user [\\d.]+, kernel [\\d.]+\\)$`, 'm'))
    }, 40_000)
  }

  it('refuses an unknown variant with its usage', () => {
    const run = spawnSync(process.execPath, [join(PROFILE, 'server.mjs'), 'nope'], { encoding: 'utf8', timeout: 20_000 })
    expect(run.status).toBe(2)
    expect(run.stderr).toContain('usage: node server.mjs <bare|verify|parse|store|memory|sqlite|hand|hand-sqlite>')
  })
})

// bench/profile/server.mjs: every variant starts, answers signed deliveries with 200, and prints
// its CPU per request on SIGINT (with STATS=1, where its answers waited; with CONSOLE_EVERY_MS, the
// console overviews it made); load.mjs sends exactly the count it is given and prints their latency,
// rate.mjs a steady rate for a time; fill-sqlite.mjs fills a store file. No speed is asserted.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

const PROFILE = join(import.meta.dirname, '..', 'profile')
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-bench-profile-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function start(variant: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [join(PROFILE, 'server.mjs'), variant], {
    env: { ...process.env, EMAIL_WEBHOOKS_DB: join(dir, `${variant}-${Object.keys(env).join('-')}.db`), ...env },
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
  const LOAD = /^300 requests, \d+\/s, p50 [\d.]+ ms, p99 [\d.]+ ms, max [\d.]+ ms, non-2xx 0, errors 0$/m
  for (const variant of [
    'bare',
    'verify',
    'parse',
    'store',
    'memory',
    'sqlite',
    'sqlite-inbox',
    'sqlite-inbox-web',
    'hand',
    'hand-sqlite',
  ]) {
    it(`${variant}: 200 to every distinct signed delivery, CPU per request on SIGINT`, async () => {
      const { child, port } = await start(variant)
      const load = spawnSync(process.execPath, [join(PROFILE, 'load.mjs'), String(port), '300'], { encoding: 'utf8', timeout: 30_000 })
      const report = await stop(child)
      expect(load.stdout).toMatch(LOAD)
      expect(report).toMatch(new RegExp(`^${variant}\\s+300 requests, CPU µs/request [\\d.]+ \\(user [\\d.]+, kernel [\\d.]+\\)$`, 'm'))
    }, 40_000)
  }

  for (const env of [{ STATS: '1' }, { STATS: '1', NOCKPT: '1' }]) {
    it(`STATS=1${env.NOCKPT ? ' NOCKPT=1' : ''}: the event loop's delay, the WAL syncs and slow statements on SIGINT (sqlite-inbox)`, async () => {
      const { child, port } = await start('sqlite-inbox', env)
      const load = spawnSync(process.execPath, [join(PROFILE, 'load.mjs'), String(port), '300'], { encoding: 'utf8', timeout: 30_000 })
      const report = await stop(child)
      expect(load.stdout).toMatch(LOAD)
      expect(report).toMatch(/^ {2}event loop delay p50 [\d.]+ ms, p99 [\d.]+ ms, max [\d.]+ ms$/m)
      // Each 2xx of an inbox-mode server waits for a sync of the WAL.
      expect(Number(/^ {2}fdatasync (\d+) \(/m.exec(report)?.[1])).toBeGreaterThan(0)
    }, 40_000)
  }

  it('CONSOLE_EVERY_MS: opens the console overview over a filled file while rate.mjs delivers at a steady rate, every answer counted', async () => {
    const path = join(dir, 'console-filled.db')
    const fill = spawnSync(process.execPath, [join(PROFILE, 'fill-sqlite.mjs'), path, '5000'], { encoding: 'utf8', timeout: 30_000 })
    expect(fill.stdout.trim()).toBe(`5000 done records in ${path}`)
    const { child, port } = await start('sqlite', { EMAIL_WEBHOOKS_DB: path, CONSOLE_EVERY_MS: '100' })
    const rate = spawnSync(process.execPath, [join(PROFILE, 'rate.mjs'), String(port), '400', '1'], { encoding: 'utf8', timeout: 60_000 })
    const report = await stop(child)
    expect(rate.stdout).toMatch(
      /^400 answers at 400\/s \(400 due\), p50 [\d.]+ ms, p99 [\d.]+ ms, p99\.9 [\d.]+ ms, max [\d.]+ ms, non-2xx 0, lost 0, connections \d+$/m,
    )
    expect(Number(/, (\d+) console overviews$/m.exec(report)?.[1])).toBeGreaterThan(0)
    // A page that failed or did not answer is printed by the server.
    expect(report).not.toMatch(/^console: /m)
  }, 60_000)

  it('console-wal.mjs: prints each phase on a filled file, and removes its copy', () => {
    const path = join(dir, 'console-wal.db')
    spawnSync(process.execPath, [join(PROFILE, 'fill-sqlite.mjs'), path, '2000'], { encoding: 'utf8', timeout: 30_000 })
    const run = spawnSync(process.execPath, [join(PROFILE, 'console-wal.mjs'), path], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, PHASE_MS: '300', ROUNDS: '1', PER_TICK: '1' },
    })
    const PHASE = (name: string) =>
      new RegExp(
        `^${name}: \\d+ events, \\d+ overviews, WAL max [\\d.]+ MiB, event loop gap p99 [\\d.]+ ms, max [\\d.]+ ms, \\d+ over 20 ms, slowest claim \\+ complete [\\d.]+ ms, 0 failed$`,
        'm',
      )
    expect(run.stdout).toMatch(PHASE('without the console'))
    expect(run.stdout).toMatch(PHASE('overview back to back'))
    expect(Number(/^overview back to back: \d+ events, (\d+) overviews/m.exec(run.stdout)?.[1])).toBeGreaterThan(0)
    expect(run.status).toBe(0)
    expect(readdirSync(dir).filter((name) => name.includes('console-wal-'))).toEqual([])
  }, 60_000)

  it('rate.mjs and fill-sqlite.mjs refuse bad arguments with their usage', () => {
    const rate = spawnSync(process.execPath, [join(PROFILE, 'rate.mjs'), '1', 'x'], { encoding: 'utf8', timeout: 20_000 })
    expect(rate.status).toBe(2)
    expect(rate.stderr).toContain('usage: node rate.mjs <port> <per-second> <seconds>')
    const fill = spawnSync(process.execPath, [join(PROFILE, 'fill-sqlite.mjs')], { encoding: 'utf8', timeout: 20_000 })
    expect(fill.status).toBe(2)
    expect(fill.stderr).toContain('usage: node fill-sqlite.mjs <file> <count>')
  })

  it('refuses an unknown variant with its usage', () => {
    const run = spawnSync(process.execPath, [join(PROFILE, 'server.mjs'), 'nope'], { encoding: 'utf8', timeout: 20_000 })
    expect(run.status).toBe(2)
    expect(run.stderr).toContain(
      'usage: node server.mjs <bare|verify|parse|store|memory|sqlite|sqlite-inbox|sqlite-inbox-web|hand|hand-sqlite>',
    )
  })
})

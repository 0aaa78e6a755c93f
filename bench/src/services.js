/**
 * PostgreSQL 15 and Redis 7 for the bench, started as the tests start them (test/services/servers.ts,
 * ported to plain JS so the bench needs no TypeScript loader): on 127.0.0.1, free ports, data in a
 * temporary folder removed on `stop()` (or when the process exits), as root through `runuser -u
 * postgres`. PostgreSQL runs with `fsync=on` and its defaults (`synchronous_commit = on`); Redis with
 * `appendonly yes` and `appendfsync always`, so every write is on disk before Redis answers it.
 * `npm test` installs both (scripts/services.mjs). `cpuMicros()` reads the server's CPU time (all its
 * processes) from /proc: the database's work is outside the receiver's process.
 */
import { execFileSync, spawn } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const PG_BIN = process.env.EMAIL_WEBHOOKS_PG_BIN ?? '/usr/lib/postgresql/15/bin'
const REDIS_SERVER = process.env.EMAIL_WEBHOOKS_REDIS_SERVER ?? 'redis-server'
const PG_USER = 'webhooks'
const HINT = 'Run `npm test` once (it installs them, scripts/services.mjs), or install postgresql-15 and redis-server.'
/** Clock ticks per second of /proc/<pid>/stat (USER_HZ): 100 on Linux everywhere it matters. */
const TICK_US = 1e6 / 100

const cleanups = new Set()
process.once('exit', () => {
  for (const cleanup of cleanups) cleanup()
})

/** A TCP port that was free a moment ago on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/** CPU time (user + system, µs) of `pid` from /proc, or 0 when it is gone. Includes all its threads. */
function processMicros(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // After the name: state is field 3, utime 14, stime 15 (1-based), so 11 and 12 here.
    return (Number(fields[11]) + Number(fields[12])) * TICK_US
  } catch {
    return 0
  }
}

/** `pid` and its direct children (PostgreSQL's backends, WAL writer, checkpointer …). */
function withChildren(pid) {
  const pids = [pid]
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1')
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (parent === pid) pids.push(Number(name))
    } catch {}
  }
  return pids
}

const asServerUser = (command, args) =>
  process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args]

/** Starts a PostgreSQL 15 with a password-protected user `webhooks`; `url` points at database `postgres`. */
export async function startPostgres() {
  if (!existsSync(join(PG_BIN, 'initdb'))) throw new Error(`PostgreSQL 15 is not installed (no ${PG_BIN}/initdb). ${HINT}`)
  const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-bench-pg-'))
  const data = join(dir, 'data')
  const password = `pw-${crypto.randomUUID()}`
  writeFileSync(join(dir, 'pwfile'), `${password}\n`)
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim())
    chownSync(dir, uid, gid)
    chownSync(join(dir, 'pwfile'), uid, gid)
  }
  chmodSync(dir, 0o700)
  const run = (command, args) => {
    const [file, argv] = asServerUser(join(PG_BIN, command), args)
    return execFileSync(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 })
  }
  const port = await freePort()
  const cleanup = () => {
    try {
      run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', '-t', '30', 'stop'])
    } catch {}
    rmSync(dir, { recursive: true, force: true })
  }
  cleanups.add(cleanup)
  // BENCH_PG_OPTIONS: more server settings for an experiment (e.g. `-c shared_buffers=2GB`); the published runs use none.
  const extra = process.env.BENCH_PG_OPTIONS ? [process.env.BENCH_PG_OPTIONS] : []
  const options = [`-p ${port}`, `-k ${dir}`, '-c listen_addresses=127.0.0.1', '-c max_connections=200', '-c fsync=on', ...extra].join(' ')
  try {
    run('initdb', ['-D', data, '-U', PG_USER, `--pwfile=${join(dir, 'pwfile')}`, '-A', 'scram-sha-256', '-E', 'UTF8', '--locale=C', '-N'])
    run('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-o', options, '-w', '-t', '60', 'start'])
  } catch (error) {
    cleanup()
    cleanups.delete(cleanup)
    throw new Error(`PostgreSQL did not start: ${error.stderr?.toString() || error.message}`)
  }
  const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'latin1').split('\n')[0])
  // Each process's CPU as last seen: a backend that exits between two readings (a pool closing its
  // connections) keeps its time in the sum, so the total never goes down (it went negative in a
  // smoke run when a variant's pool closed between a round's marks).
  const seen = new Map()
  const cpuMicros = () => {
    for (const pid of withChildren(postmaster)) {
      const micros = processMicros(pid)
      if (micros > 0) seen.set(pid, Math.max(micros, seen.get(pid) ?? 0))
    }
    let sum = 0
    for (const micros of seen.values()) sum += micros
    return sum
  }
  return {
    name: 'postgres',
    url: `postgres://${PG_USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    port,
    /** CPU µs of the postmaster and every process it started (those gone counted as last seen), now. */
    cpuMicros,
    async stop() {
      try {
        run('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '30', 'stop'])
      } catch {}
      rmSync(dir, { recursive: true, force: true })
      cleanups.delete(cleanup)
    },
  }
}

/** Starts a Redis 7 with `appendonly yes`, `appendfsync always`, `maxmemory-policy noeviction` and a password. */
export async function startRedis() {
  const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-bench-redis-'))
  const password = `pw-${crypto.randomUUID()}`
  const port = await freePort()
  const config = [
    `port ${port}`,
    'bind 127.0.0.1',
    `dir ${dir}`,
    'appendonly yes',
    'appendfsync always',
    'maxmemory-policy noeviction',
    'save ""',
    `requirepass ${password}`,
    'daemonize no',
  ]
  writeFileSync(join(dir, 'redis.conf'), `${config.join('\n')}\n`, { mode: 0o600 })
  const child = spawn(REDIS_SERVER, [join(dir, 'redis.conf')], { stdio: ['ignore', 'pipe', 'pipe'] })
  const cleanup = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
  cleanups.add(cleanup)
  try {
    await new Promise((resolve, reject) => {
      let output = ''
      const timer = setTimeout(() => reject(new Error(`Redis did not start within 20 s:\n${output}`)), 20_000)
      const onData = (chunk) => {
        output += chunk
        if (output.includes('Ready to accept connections')) {
          clearTimeout(timer)
          child.stdout.off('data', onData)
          child.stdout.resume()
          child.stderr.resume()
          resolve()
        }
      }
      child.stdout.on('data', onData)
      child.stderr.on('data', (chunk) => {
        output += chunk
      })
      child.once('error', (error) => {
        clearTimeout(timer)
        reject(new Error(error.code === 'ENOENT' ? `redis-server is not installed. ${HINT}` : `redis-server failed: ${error.message}`))
      })
      child.once('exit', (code) => {
        clearTimeout(timer)
        reject(new Error(`redis-server exited (${code}) before it was ready:\n${output}`))
      })
    })
  } catch (error) {
    cleanup()
    cleanups.delete(cleanup)
    throw error
  }
  return {
    name: 'redis',
    url: `redis://:${password}@127.0.0.1:${port}`,
    port,
    /** CPU µs of redis-server (all its threads), now. */
    cpuMicros: () => processMicros(child.pid),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const gone = new Promise((resolve) => child.once('exit', resolve))
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
        child.kill('SIGTERM')
        await gone
        clearTimeout(timer)
      }
      rmSync(dir, { recursive: true, force: true })
      cleanups.delete(cleanup)
    },
  }
}

/** Each service started on first use and kept for the run: `await services.get('postgres')`; `stopAll()` at the end. */
export function lazyServices() {
  const started = new Map()
  return {
    get(name) {
      if (!started.has(name)) started.set(name, name === 'postgres' ? startPostgres() : startRedis())
      return started.get(name)
    },
    async stopAll() {
      const all = await Promise.allSettled(started.values())
      started.clear()
      await Promise.all(all.filter((s) => s.status === 'fulfilled').map((s) => s.value.stop()))
    },
  }
}

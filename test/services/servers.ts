/**
 * Real database servers for tests: a PostgreSQL 15 and a Redis 7 on 127.0.0.1, on free ports,
 * with their data in a temporary folder, stopped (and the folder removed) by `stop()` or, at the
 * latest, when the test process exits. `npm test` installs the servers when they are missing
 * (scripts/services.mjs).
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createConnection, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, inject } from 'vitest'

const INSTALL_HINT =
  'Run the tests with `npm test`, which installs it (scripts/services.mjs), or install the Debian/Ubuntu packages postgresql-15 and redis-server.'
const PG_BIN = process.env.EMAIL_WEBHOOKS_PG_BIN ?? '/usr/lib/postgresql/15/bin'
const REDIS_SERVER = process.env.EMAIL_WEBHOOKS_REDIS_SERVER ?? 'redis-server'
const PG_USER = 'webhooks'

/** A server a test file may use but not stop, crash or restart: a database of its own on a shared server, or a server of its own. */
export interface TestServer {
  /** Connection URL with the password. */
  url: string
  password: string
  port: number
  /** Drops the file's database (on a shared server) or stops the server. */
  stop(): Promise<void>
}

export interface RunningServer extends TestServer {
  /** Kills the server the hard way (SIGKILL for Redis, `pg_ctl stop -m immediate` for PostgreSQL) and starts it again on the same data and port. */
  crashAndRestart(): Promise<void>
  /**
   * Stops the server without blocking the event loop, keeping its data and port: `graceful` is
   * `pg_ctl stop -m fast` / SIGTERM, `crash` is `pg_ctl stop -m immediate` / SIGKILL. `start()` brings it back.
   */
  halt(how: 'graceful' | 'crash'): Promise<void>
  /** Starts a server stopped by `halt()` again on the same data and port; resolves once it accepts connections. */
  start(): Promise<void>
}

const cleanups = new Set<() => void>()
process.once('exit', () => {
  for (const cleanup of cleanups) cleanup()
})

/** A TCP port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

/**
 * Starts a server on a port `freePort()` found, again on another when something else took that
 * port in between (seen once in a full run: another file's server bound it first), at most 3 times.
 */
async function onAFreePort<T>(start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start()
    } catch (error) {
      if (attempt >= 3 || !(error instanceof Error) || !/address already in use/i.test(error.message)) throw error
    }
  }
}

const randomPassword = () => `pw-${crypto.randomUUID()}`

/** The last lines of a server's log, or '' when there is none. */
function serverLogTail(path: string, lines = 6): string {
  try {
    return readFileSync(path, 'utf8').trim().split('\n').slice(-lines).join('\n')
  } catch {
    return ''
  }
}

/** execFile as a promise: rejects with the command's stderr when it fails. */
function execFileAsync(file: string, args: string[], timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs }, (error, _stdout, stderr) =>
      error ? reject(new Error(`${file} ${args.join(' ')} failed: ${stderr || error.message}`)) : resolve(),
    )
  })
}

/** initdb and postgres refuse to run as root: as root, run them as the `postgres` user. */
function asServerUser(command: string, args: string[]): [string, string[]] {
  if (process.getuid?.() !== 0) return [command, args]
  return ['runuser', ['-u', 'postgres', '--', command, ...args]]
}

/**
 * Starts a PostgreSQL 15 with a password-protected user `webhooks`; `url` points at database
 * `postgres`. `maxConnections` (default 200) is higher for the server the whole run shares.
 */
export function startPostgres(options: { maxConnections?: number } = {}): Promise<RunningServer> {
  return onAFreePort(() => startPostgresOnce(options))
}

async function startPostgresOnce(options: { maxConnections?: number }): Promise<RunningServer> {
  if (!existsSync(join(PG_BIN, 'initdb')) || !existsSync(join(PG_BIN, 'pg_ctl'))) {
    throw new Error(`PostgreSQL 15 is not installed (no ${PG_BIN}/initdb). ${INSTALL_HINT}`)
  }
  const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-pg-'))
  const data = join(dir, 'data')
  const password = randomPassword()
  writeFileSync(join(dir, 'pwfile'), `${password}\n`)
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim())
    chownSync(dir, uid, gid)
    chownSync(join(dir, 'pwfile'), uid, gid)
  }
  chmodSync(dir, 0o700)
  const run = (command: string, args: string[]) => {
    const [file, argv] = asServerUser(join(PG_BIN, command), args)
    return execFileSync(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 })
  }
  const port = await freePort()
  const pgCtlStop = (mode: 'fast' | 'immediate') => {
    try {
      run('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '30', 'stop'])
    } catch {}
  }
  const cleanup = () => {
    pgCtlStop('immediate')
    rmSync(dir, { recursive: true, force: true })
  }
  cleanups.add(cleanup)
  const serverOptions = [
    `-p ${port}`,
    `-k ${dir}`,
    '-c listen_addresses=127.0.0.1',
    `-c max_connections=${options.maxConnections ?? 200}`,
    '-c fsync=on',
  ].join(' ')
  const startArgs = ['-D', data, '-l', join(dir, 'server.log'), '-o', serverOptions, '-w', '-t', '60', 'start']
  const pgCtlStart = () => run('pg_ctl', startArgs)
  const pgCtlAsync = (args: string[]) => execFileAsync(...asServerUser(join(PG_BIN, 'pg_ctl'), args), 90_000)
  try {
    run('initdb', ['-D', data, '-U', PG_USER, `--pwfile=${join(dir, 'pwfile')}`, '-A', 'scram-sha-256', '-E', 'UTF8', '--locale=C', '-N'])
    pgCtlStart()
  } catch (error) {
    // pg_ctl says only "could not start server"; why is in the server's log (a port taken since
    // freePort() found it: "could not bind … Address already in use", which onAFreePort retries on).
    const log = serverLogTail(join(dir, 'server.log'))
    cleanup()
    cleanups.delete(cleanup)
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? ''
    throw new Error(`PostgreSQL did not start: ${stderr || (error as Error).message}${log ? `\nserver.log: ${log}` : ''}`)
  }
  return {
    url: `postgres://${PG_USER}:${password}@127.0.0.1:${port}/postgres`,
    password,
    port,
    async crashAndRestart() {
      // Immediate shutdown skips the checkpoint: the next start replays the WAL, as after a crash.
      run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', '-t', '30', 'stop'])
      pgCtlStart()
    },
    halt: (how) => pgCtlAsync(['-D', data, '-m', how === 'crash' ? 'immediate' : 'fast', '-w', '-t', '30', 'stop']),
    start: () => pgCtlAsync(startArgs),
    async stop() {
      pgCtlStop('fast')
      rmSync(dir, { recursive: true, force: true })
      cleanups.delete(cleanup)
    },
  }
}

/** Starts a Redis 7 with `appendonly yes`, `appendfsync always`, `maxmemory-policy noeviction` and a password; `args` override settings. */
export function startRedis(options: { args?: string[] } = {}): Promise<RunningServer> {
  return onAFreePort(() => startRedisOnce(options))
}

async function startRedisOnce(options: { args?: string[] }): Promise<RunningServer> {
  const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-redis-'))
  const password = randomPassword()
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
  ].join('\n')
  writeFileSync(join(dir, 'redis.conf'), `${config}\n`, { mode: 0o600 })
  const args = [join(dir, 'redis.conf'), ...(options.args ?? [])]
  let child: ChildProcess | undefined
  const cleanup = () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
  cleanups.add(cleanup)
  const launch = () =>
    new Promise<void>((resolve, reject) => {
      const started = spawn(REDIS_SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] })
      child = started
      let output = ''
      const timer = setTimeout(() => fail(new Error(`Redis did not start within 20 s:\n${output}`)), 20_000)
      const onData = (chunk: Buffer) => {
        output += chunk.toString()
        if (output.includes('Ready to accept connections')) finish()
      }
      const onError = (error: NodeJS.ErrnoException) =>
        fail(
          new Error(error.code === 'ENOENT' ? `redis-server is not installed. ${INSTALL_HINT}` : `redis-server failed: ${error.message}`),
        )
      const onExit = (code: number | null) => fail(new Error(`redis-server exited (${code}) before it was ready:\n${output}`))
      function finish() {
        clearTimeout(timer)
        started.stdout?.off('data', onData)
        started.off('error', onError)
        started.off('exit', onExit)
        started.stdout?.resume()
        started.stderr?.resume()
        resolve()
      }
      function fail(error: Error) {
        clearTimeout(timer)
        reject(error)
      }
      started.stdout?.on('data', onData)
      started.stderr?.on('data', (chunk: Buffer) => {
        output += chunk.toString()
      })
      started.once('error', onError)
      started.once('exit', onExit)
    })
  const stopChild = (signal: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      const running = child
      if (!running || running.exitCode !== null || running.signalCode !== null) return resolve()
      const timer = setTimeout(() => running.kill('SIGKILL'), 10_000)
      running.once('exit', () => {
        clearTimeout(timer)
        resolve()
      })
      running.kill(signal)
    })
  try {
    await launch()
  } catch (error) {
    cleanup()
    cleanups.delete(cleanup)
    throw error
  }
  return {
    url: `redis://:${password}@127.0.0.1:${port}`,
    password,
    port,
    async crashAndRestart() {
      await stopChild('SIGKILL')
      await launch()
    },
    halt: (how) => stopChild(how === 'crash' ? 'SIGKILL' : 'SIGTERM'),
    start: launch,
    async stop() {
      await stopChild('SIGTERM')
      rmSync(dir, { recursive: true, force: true })
      cleanups.delete(cleanup)
    },
  }
}

const PGBOUNCER = process.env.EMAIL_WEBHOOKS_PGBOUNCER ?? '/usr/sbin/pgbouncer'

/**
 * Starts a PgBouncer (Debian's, or EMAIL_WEBHOOKS_PGBOUNCER) in front of `server` on a free port,
 * `poolMode` pooling and otherwise its defaults (unless given, no `ignore_startup_parameters`): `url` is the
 * server's, through it. It refuses to run as root: as root, it runs as the `postgres` user.
 */
export function startPgBouncer(server: TestServer, options: PgBouncerOptions): Promise<TestServer> {
  return onAFreePort(() => startPgBouncerOnce(server, options))
}

interface PgBouncerOptions {
  poolMode: 'transaction' | 'session'
  /** Its `ignore_startup_parameters` (none by default). */
  ignoreStartupParameters?: string[]
}

async function startPgBouncerOnce(server: TestServer, options: PgBouncerOptions): Promise<TestServer> {
  if (!existsSync(PGBOUNCER)) {
    throw new Error(
      `PgBouncer is not installed (no ${PGBOUNCER}). Run the tests with \`npm run test:all\`, which installs it (scripts/services.mjs), or install the Debian/Ubuntu package pgbouncer.`,
    )
  }
  const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-pgbouncer-'))
  const port = await freePort()
  const target = new URL(server.url)
  writeFileSync(join(dir, 'users.txt'), `"${decodeURIComponent(target.username)}" "${server.password}"\n`, { mode: 0o600 })
  const config = [
    '[databases]',
    `* = host=127.0.0.1 port=${target.port}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = plain',
    `auth_file = ${join(dir, 'users.txt')}`,
    `pool_mode = ${options.poolMode}`,
    'max_client_conn = 1000',
    // Server connections per database and user: the suites' stores run side by side, each with a pool of 10.
    'default_pool_size = 40',
    `logfile = ${join(dir, 'pgbouncer.log')}`,
    ...(options.ignoreStartupParameters ? [`ignore_startup_parameters = ${options.ignoreStartupParameters.join(', ')}`] : []),
  ].join('\n')
  writeFileSync(join(dir, 'pgbouncer.ini'), `${config}\n`, { mode: 0o600 })
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim())
    for (const file of ['', 'users.txt', 'pgbouncer.ini']) chownSync(join(dir, file), uid, gid)
  }
  const [file, argv] = asServerUser(PGBOUNCER, [join(dir, 'pgbouncer.ini')])
  const child = spawn(file, argv, { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const cleanup = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
  cleanups.add(cleanup)
  // Ready once it accepts a connection; a port taken since freePort() ends it at once.
  const deadline = Date.now() + 20_000
  for (;;) {
    if (child.exitCode !== null) {
      const log = `${stderr}${serverLogTail(join(dir, 'pgbouncer.log'))}`
      cleanup()
      cleanups.delete(cleanup)
      throw new Error(`PgBouncer exited (${child.exitCode}) before it was ready: ${log}`)
    }
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (open) break
    if (Date.now() > deadline) {
      cleanup()
      cleanups.delete(cleanup)
      throw new Error(`PgBouncer did not accept connections within 20 s: ${stderr}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const url = new URL(server.url)
  url.port = String(port)
  return {
    url: url.href,
    password: server.password,
    port,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGTERM')
        await exited
      }
      rmSync(dir, { recursive: true, force: true })
      cleanups.delete(cleanup)
    },
  }
}

/**
 * Starts PostgreSQL and Redis at once. When one cannot start, the other is stopped before the
 * error is thrown: a test file's afterAll never learns of a server its beforeAll did not return.
 */
export async function startPostgresAndRedis(): Promise<{ postgres: RunningServer; redis: RunningServer }> {
  const [postgres, redis] = await Promise.allSettled([startPostgres(), startRedis()])
  if (postgres.status === 'fulfilled' && redis.status === 'fulfilled') return { postgres: postgres.value, redis: redis.value }
  await Promise.all([postgres, redis].map((started) => (started.status === 'fulfilled' ? started.value.stop() : undefined)))
  throw postgres.status === 'rejected' ? postgres.reason : (redis as PromiseRejectedResult).reason
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The suite's PostgreSQL (test/services/global-setup.ts): the URL of its database `postgres`. */
    sharedPostgresUrl: string
    /** The suite's Redis (test/services/global-setup.ts), with SHARED_REDIS_DATABASES logical databases. */
    sharedRedisUrl: string
  }
}

/** Logical databases of the shared Redis: one per file that asks, numbered from 1 (0 keeps the counter). */
export const SHARED_REDIS_DATABASES = 4096

function provided(key: 'sharedPostgresUrl' | 'sharedRedisUrl'): string | undefined {
  try {
    return inject(key)
  } catch {
    return undefined // outside a vitest worker, or a config without the global setup
  }
}

/**
 * A database of its own for this test file on the suite's PostgreSQL, started once for every file
 * (test/services/global-setup.ts): `CREATE DATABASE` takes milliseconds where a server of its own
 * takes an initdb and a start (about 2 s of CPU). Files that stop, crash or restart their server,
 * or change its settings, use startPostgres(). Without the shared server, starts one.
 */
export async function sharedPostgres(): Promise<TestServer> {
  const admin = provided('sharedPostgresUrl')
  if (!admin) return startPostgres()
  const database = `test_${crypto.randomUUID().replaceAll('-', '')}`
  const client = new pg.Client({ connectionString: admin })
  await client.connect()
  try {
    await client.query(`CREATE DATABASE ${database}`)
  } finally {
    await client.end()
  }
  const url = new URL(admin)
  url.pathname = `/${database}`
  return {
    url: url.toString(),
    password: decodeURIComponent(url.password),
    port: Number(url.port),
    async stop() {
      const dropper = new pg.Client({ connectionString: admin })
      await dropper.connect()
      try {
        await dropper.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
      } finally {
        await dropper.end()
      }
    },
  }
}

/**
 * A logical database of its own for this test file on the suite's Redis (appendfsync always, as
 * startRedis() configures it), numbered by an INCR on database 0. Files that kill, restart or
 * reconfigure their server use startRedis(). Without the shared server, starts one.
 */
export async function sharedRedis(): Promise<TestServer> {
  const admin = provided('sharedRedisUrl')
  if (!admin) return startRedis()
  const client = new Redis(admin, { lazyConnect: true, maxRetriesPerRequest: 3 })
  await client.connect()
  let db: number
  try {
    db = ((await client.incr('email-webhooks-tests:next-database')) % (SHARED_REDIS_DATABASES - 1)) + 1
  } finally {
    client.disconnect()
  }
  const url = new URL(admin)
  url.pathname = `/${db}`
  return {
    url: url.toString(),
    password: decodeURIComponent(url.password),
    port: Number(url.port),
    async stop() {
      const flusher = new Redis(url.toString(), { lazyConnect: true, maxRetriesPerRequest: 3 })
      await flusher.connect()
      try {
        await flusher.flushdb()
      } finally {
        flusher.disconnect()
      }
    },
  }
}

/** sharedPostgres() and sharedRedis() at once. */
export async function sharedPostgresAndRedis(): Promise<{ postgres: TestServer; redis: TestServer }> {
  const [postgres, redis] = await Promise.all([sharedPostgres(), sharedRedis()])
  return { postgres, redis }
}

/**
 * For the calling test file (or describe block): a PostgreSQL database and a client on it for the
 * test's own SQL, ready before its tests and closed after. `own`: a server of its own
 * (startPostgres); else a database of its own on the run's shared server (sharedPostgres).
 */
export function postgresWithClient(options: { own?: boolean } = {}): { server: TestServer; client: pg.Client } {
  const ready = {} as { server: TestServer; client: pg.Client }
  beforeAll(async () => {
    ready.server = options.own ? await startPostgres() : await sharedPostgres()
    ready.client = new pg.Client({ connectionString: ready.server.url })
    await ready.client.connect()
  }, 120_000)
  afterAll(async () => {
    await ready.client?.end()
    await ready.server?.stop()
  })
  return ready
}

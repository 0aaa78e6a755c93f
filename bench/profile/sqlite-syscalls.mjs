// bench/profile/sqlite-syscalls.mjs (issue 48): system calls per event of the Hono + SQLite server
// on an empty file and on one filled with `size` done records (bench/src/fill.js), counted by
// `perf stat` (syscall tracepoints) on the server's pid during 5 s rounds of the HTTP bench's load
// (pinned, 10 connections, pre-signed distinct events), two rounds each after a warm-up. Needs perf
// and root (or perf_event_paranoid ≤ 1); tracepoints slow the server a little (CPU figures are
// higher than the bench's). Build first: it imports the built packages.
//
//   node bench/profile/sqlite-syscalls.mjs 10000000
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import Database from 'better-sqlite3'
import { fillSqliteStore } from '../src/fill.js'
import { ipcChild, round, startServer } from '../src/http.js'
import { detectPinning, spawnNode } from '../src/pinning.js'

const size = Number(process.argv[2] ?? 1_000_000)
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-syscalls-'))
const path = join(dir, 'filled.db')
await new SqliteDedupStore({ path }).close()
const db = new Database(path)
db.pragma('cache_size = -1000000')
await fillSqliteStore(db, { path, count: size })
db.pragma('wal_checkpoint(TRUNCATE)')
db.close()
const pinning = detectPinning()
const load = ipcChild(
  spawnNode(pinning, pinning.loadCore, [join(import.meta.dirname, '../src/loadgen.js')], { stdio: ['ignore', 'inherit', 'pipe', 'ipc'] }),
  'load',
)
const empty = await startServer(pinning, 'hono', 'sqlite', {})
const full = await startServer(pinning, 'hono', 'sqlite', { env: { EMAIL_WEBHOOKS_DB: path } })
const events =
  'syscalls:sys_enter_pwrite64,syscalls:sys_enter_pread64,syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync,syscalls:sys_enter_fcntl'
for (const s of [empty, full]) await round(load, s, { pinning, connections: 10, tool: 'raw', kind: 'distinct', seconds: 2 })
for (let r = 0; r < 2; r++)
  for (const [name, s] of [
    ['empty', empty],
    ['filled', full],
  ]) {
    const pid = s.pid
    const perf = spawn('perf', ['stat', '-x', ',', '-e', events, '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] })
    let out = ''
    perf.stderr.on('data', (d) => {
      out += d
    })
    await new Promise((r) => setTimeout(r, 300))
    const row = await round(load, s, { pinning, connections: 10, tool: 'raw', kind: 'distinct', seconds: 5 })
    perf.kill('SIGINT')
    await new Promise((r) => perf.on('exit', r))
    const counts = Object.fromEntries(
      out
        .trim()
        .split('\n')
        .map((l) => l.split(','))
        .filter((f) => f[2])
        .map((f) => [f[2].replace('syscalls:sys_enter_', ''), Number(f[0])]),
    )
    console.log(
      name,
      r + 1,
      Math.round(row.perSecond),
      'req/s',
      row.cpuPerRequestUs.toFixed(1),
      'µs/req',
      Object.entries(counts)
        .map(([k, v]) => `${k} ${(v / row.served).toFixed(2)}/event`)
        .join(', '),
    )
  }
await Promise.all([empty.stop(), full.stop(), load.stop()])
rmSync(dir, { recursive: true, force: true })

/**
 * Many instances (issue 34): three receiver processes on one PostgreSQL, then on one Redis, the load
 * spread over them and every event sent to two of them (copies; payloads.js buildCopiesPools, the
 * copies `lag` requests apart, 0 by default: both at about the same moment). Ours (our adapter with
 * the shared store) and the hand-written baseline (SELECT/GET, the handler, then INSERT … ON
 * CONFLICT DO NOTHING / SET NX) in interleaved rounds. Per round: durable events per second (events
 * with at least one 2xx answer), handler runs per event (each server notes the event ids its
 * handler ran, BENCH_JOURNAL=1; exactly 1 is right, more means a copy ran it again), answers 409
 * (a copy refused while the other runs: the sender retries it), and CPU per event of the three
 * receivers together and of the database server (/proc).
 */
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { median } from './harness.js'
import { ipcChild, startServer } from './http.js'
import { spawnNode } from './pinning.js'

const here = fileURLToPath(new URL('.', import.meta.url))
export const MULTI_STORES = ['postgres', 'redis']
const FIRST_RATE_GUESS = 3_000

/** Handler runs per acknowledged event, from the servers' journals and the client's acknowledged ids. */
export function countRuns(journals, acked) {
  const runs = new Map()
  for (const ids of journals) for (const id of ids) runs.set(id, (runs.get(id) ?? 0) + 1)
  let once = 0
  let twice = 0
  let never = 0
  let total = 0
  for (const id of acked) {
    const n = runs.get(id) ?? 0
    total += n
    if (n === 1) once++
    else if (n === 0) never++
    else twice++
    runs.delete(id)
  }
  // Runs of events no copy of which was acknowledged (a 409 copy and a failed one, or none).
  let unacked = 0
  for (const n of runs.values()) unacked += n
  return { once, twice, never, unacked, perEvent: acked.length ? total / acked.length : 0 }
}

async function multiRound(load, group, { service, connections, seconds, lag, maxEvents }) {
  const events = Math.min(maxEvents ?? Number.POSITIVE_INFINITY, Math.ceil(group.rate * seconds * 1.5) + 1_000)
  await load.request({ type: 'prepare', tool: 'copies', ports: group.servers.map((s) => s.port), size: events, lag, connections, seconds })
  await Promise.all(group.servers.map((server) => server.journal())) // forget earlier runs
  const before = await Promise.all(group.servers.map((server) => server.mark()))
  const dbBefore = service.cpuMicros()
  const result = await load.request({ type: 'go' })
  const dbAfter = service.cpuMicros()
  const after = await Promise.all(group.servers.map((server) => server.mark()))
  const journals = await Promise.all(group.servers.map((server) => server.journal()))
  let cpuUs = 0
  for (let i = 0; i < after.length; i++) cpuUs += after[i].cpu.user - before[i].cpu.user + (after[i].cpu.system - before[i].cpu.system)
  const acked = result.acked.length
  const perSecond = (acked / result.elapsedMs) * 1000
  group.rate = group.observed ? Math.max(group.rate, perSecond) : perSecond
  group.observed = true
  const { acked: _ids, ...rest } = result
  const other = result.non2xx - result.inFlight
  return {
    ...rest,
    events,
    acked,
    perSecond,
    runs: countRuns(journals, result.acked),
    cpuPerEventUs: acked ? cpuUs / acked : 0,
    dbCpuPerEventUs: acked ? (dbAfter - dbBefore) / acked : 0,
    otherNon2xx: other,
    flagged: other > 0 || result.errors > 0,
  }
}

function summarizeSide(rows) {
  const m = (f) => median(rows.map(f))
  return {
    perSecond: m((r) => r.perSecond),
    cpuPerEventUs: m((r) => r.cpuPerEventUs),
    dbCpuPerEventUs: m((r) => r.dbCpuPerEventUs),
    p50Us: m((r) => r.p50Us),
    p99Us: m((r) => r.p99Us),
    acked: rows.reduce((sum, r) => sum + r.acked, 0),
    runsOnce: rows.reduce((sum, r) => sum + r.runs.once, 0),
    runsTwice: rows.reduce((sum, r) => sum + r.runs.twice, 0),
    runsNever: rows.reduce((sum, r) => sum + r.runs.never, 0),
    runsUnacked: rows.reduce((sum, r) => sum + r.runs.unacked, 0),
    inFlight: rows.reduce((sum, r) => sum + r.inFlight, 0),
    otherNon2xx: rows.reduce((sum, r) => sum + r.otherNon2xx, 0),
    errors: rows.reduce((sum, r) => sum + r.errors, 0),
  }
}

/**
 * Runs both stores, ours and the hand-written, `instances` servers each on the server core.
 * @returns {Promise<object[]>} one row per store: `{ store, ours, hand, ratio, rounds }`
 */
export async function runMultiBench({
  pinning,
  services,
  stores = MULTI_STORES,
  framework = 'hono',
  instances = 3,
  connections = 10,
  rounds,
  seconds,
  warmupSeconds = 0,
  lag = 0,
  maxEvents,
  onRound,
}) {
  const loadChild = spawnNode(pinning, pinning.loadCore, [join(here, 'loadgen.js')], { stdio: ['ignore', 'inherit', 'pipe', 'ipc'] })
  const load = ipcChild(loadChild, 'load generator')
  const results = []
  const groups = []
  try {
    for (const store of stores) {
      const service = await services.get(store)
      const start = (mode) => startServer(pinning, framework, mode, { services, env: { BENCH_JOURNAL: '1' } })
      const hand = { servers: await Promise.all(Array.from({ length: instances }, () => start(`hand-${store}`))), rate: FIRST_RATE_GUESS }
      groups.push(hand)
      const ours = { servers: await Promise.all(Array.from({ length: instances }, () => start(store))), rate: FIRST_RATE_GUESS }
      groups.push(ours)
      const options = { service, connections, seconds, lag, maxEvents }
      if (warmupSeconds > 0) for (const group of [hand, ours]) await multiRound(load, group, { ...options, seconds: warmupSeconds })
      const rows = { hand: [], ours: [] }
      for (let r = 0; r < rounds; r++) {
        rows.hand.push(await multiRound(load, hand, options))
        rows.ours.push(await multiRound(load, ours, options))
        onRound?.(store, r, rows.hand.at(-1), rows.ours.at(-1))
      }
      results.push({
        store,
        framework,
        instances,
        connections,
        lag,
        hand: summarizeSide(rows.hand),
        ours: summarizeSide(rows.ours),
        ratio: median(rows.ours.map((o, i) => o.perSecond / rows.hand[i].perSecond)),
        rounds: rows,
      })
      for (const group of [hand, ours]) await Promise.all(group.servers.map((server) => server.stop()))
    }
  } finally {
    await Promise.all([...groups.flatMap((group) => group.servers.map((server) => server.stop())), load.stop()])
  }
  return results
}

/**
 * HTTP: each variant (our adapter with a store) is measured in interleaved rounds with its
 * baselines (variants.js): its `main` one (the hand-written receiver with the same kind of dedup)
 * and, for information, its `info` one (the bare framework): info, main, ours, info, main, ours, …
 * after a warm-up. Servers run in their own processes pinned to one core, the load generator in
 * another pinned to the other (pinning.js); every round sends pre-signed events from a pool built
 * before it. Server CPU per request comes from the server's own `process.cpuUsage()` across the
 * round (over IPC, untimed); a database server's CPU (PostgreSQL, Redis: outside the receiver's
 * process) from /proc across the same round. After the rounds, one autocannon pair (main, ours;
 * fixed count, timed end to end) cross-checks the ratio.
 */
import { once } from 'node:events'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { median } from './harness.js'
import { cpuTicks, othersShare, pinProcess, spawnNode } from './pinning.js'
import { BASELINE_LABELS, HTTP_VARIANTS, serviceOf } from './variants.js'

export { BASELINE_LABELS, HTTP_VARIANTS }

const here = fileURLToPath(new URL('.', import.meta.url))
/** A load generator busier than this may be what limits a round (reported, not flagged). */
const LOAD_BOUND = 0.8

/** Two ratios from the two load generators agree when they differ by at most this much. */
export const AGREEMENT = 0.1
const FIRST_RATE_GUESS = 20_000

/** A child process spoken to over IPC: `request(message)` resolves with the next reply. */
export function ipcChild(child, name) {
  let stderr = ''
  child.stderr?.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-4000)
  })
  const exited = once(child, 'exit').then(([code]) => {
    throw new Error(`${name} exited with ${code}: ${stderr.trim()}`)
  })
  exited.catch(() => {})
  const next = () => Promise.race([once(child, 'message').then(([message]) => message), exited])
  return {
    next,
    async request(message) {
      const reply = next()
      child.send(message)
      const answer = await reply
      if (answer?.type === 'error') throw new Error(`${name}: ${answer.message}`)
      return answer
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      const gone = once(child, 'exit')
      child.kill('SIGTERM')
      await gone
    },
  }
}

/**
 * Starts `node server.js <framework> <mode>` pinned to the server core; SQLite modes get a file of
 * their own, PostgreSQL and Redis modes the URL of the run's server (`services`, started on first use).
 */
export async function startServer(pinning, framework, mode, { services, env: extraEnv = {} } = {}) {
  const dir = mode.includes('sqlite') ? mkdtempSync(join(tmpdir(), 'email-webhooks-http-')) : undefined
  const dbPath = dir && join(dir, 'dedup.db')
  const serviceName = serviceOf(mode)
  const service = serviceName ? await services.get(serviceName) : undefined
  const env = {
    ...process.env,
    ...(dbPath ? { EMAIL_WEBHOOKS_DB: dbPath } : {}),
    ...(serviceName === 'postgres' ? { BENCH_POSTGRES_URL: service.url } : {}),
    ...(serviceName === 'redis' ? { BENCH_REDIS_URL: service.url } : {}),
    ...extraEnv,
  }
  const child = spawnNode(pinning, undefined, [join(here, 'server.js'), framework, mode], {
    env,
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  })
  const ipc = ipcChild(child, `server ${framework} ${mode}`)
  const { port } = await ipc.next()
  pinProcess(pinning, pinning.serverCore, child.pid)
  return {
    port,
    pid: child.pid,
    mode,
    dbPath,
    service,
    rate: FIRST_RATE_GUESS,
    mark: () => ipc.request({ type: 'mark' }),
    journal: async () => (await ipc.request({ type: 'journal' })).ids,
    async stop() {
      await ipc.stop()
      if (dir) rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** One measured round against `server`: pool built first, then CPU marks around the load. */
export async function round(load, server, { pinning, tool, kind, seconds, connections, maxPool }) {
  const wanted = Math.ceil(server.rate * seconds * (tool === 'raw' ? 1.5 : 1)) + (tool === 'raw' ? 1_000 : 0)
  const size = Math.max(connections * 4, Math.min(maxPool ?? Number.POSITIVE_INFINITY, wanted))
  const { buildMs } = await load.request({ type: 'prepare', tool, port: server.port, kind, size, connections, seconds })
  const core = pinning.enabled ? pinning.serverCore : undefined
  const before = await server.mark()
  const dbBefore = server.service?.cpuMicros()
  const ticks = cpuTicks(core)
  const result = await load.request({ type: 'go' })
  const ticksAfter = cpuTicks(core)
  const dbAfter = server.service?.cpuMicros()
  const after = await server.mark()
  const cpuUs = after.cpu.user - before.cpu.user + (after.cpu.system - before.cpu.system)
  const served = after.requests - before.requests
  if (tool === 'raw') {
    // Size the next pools from what this server has shown; a pool that ran out grows.
    server.rate =
      result.poolExhausted && maxPool === undefined
        ? Math.max(server.rate, result.perSecond) * 1.5
        : server.observed
          ? Math.max(server.rate, result.perSecond)
          : result.perSecond
    server.observed = true
  }
  const serverBusy = cpuUs / 1000 / result.elapsedMs
  return {
    ...result,
    tool,
    connections,
    // Other processes' use of the server's core (of the machine, unpinned): a busy machine shows here.
    others: othersShare(
      ticks,
      ticksAfter,
      core === undefined ? serverBusy + result.loadBusy : serverBusy,
      core === undefined ? cpus().length : 1,
    ),
    buildMs,
    served,
    handled: after.handled - before.handled,
    // Inbox mode: entries not yet handled when the round ended (the worker's backlog).
    backlog: after.pending,
    cpuPerRequestUs: served > 0 ? cpuUs / served : 0,
    // The database server's CPU (all its processes, /proc ticks of 10 ms) per request of the round.
    dbCpuPerRequestUs: dbBefore === undefined ? undefined : served > 0 ? (dbAfter - dbBefore) / served : 0,
    serverBusy,
    // The raw client counts its answers; the server counts what it received: they must agree.
    flagged: result.non2xx > 0 || result.errors > 0 || (tool === 'raw' && served !== result.requests),
    loadBound: result.loadBusy >= LOAD_BOUND,
  }
}

/** Medians of one side's rounds. */
function figures(rows) {
  const m = (key) => median(rows.map((row) => row[key]))
  const db = rows.every((row) => row.dbCpuPerRequestUs !== undefined) ? m('dbCpuPerRequestUs') : undefined
  return { perSecond: m('perSecond'), p50Us: m('p50Us'), p99Us: m('p99Us'), cpuUs: m('cpuPerRequestUs'), dbCpuUs: db }
}

/** One baseline's figures and ours against them: ratios are medians of the rounds' own ratios. */
function against(side, mode, framework, pairs) {
  const base = pairs.map((pair) => pair[side])
  const ours = pairs.map((pair) => pair.variant)
  const f = figures(base)
  const o = figures(ours)
  const total = (row) => row.cpuPerRequestUs + (row.dbCpuPerRequestUs ?? 0)
  return {
    mode,
    label: BASELINE_LABELS[`${framework} ${mode}`] ?? mode,
    ...f,
    ratio: median(pairs.map((pair) => pair.variant.perSecond / pair[side].perSecond)),
    cpuRatio: o.cpuUs / Math.max(f.cpuUs, 1e-9),
    // Receiver and database server together, where the database's CPU was measured.
    totalCpuRatio: median(pairs.map((pair) => total(pair.variant) / Math.max(total(pair[side]), 1e-9))),
    cpuOverUs: o.cpuUs - f.cpuUs,
    p99Ratio: o.p99Us / Math.max(f.p99Us, 1),
  }
}

/** Medians and ratios of one variant's rounds. */
export function summarize(variant, pairs, cross) {
  const sides = pairs.flatMap((pair) => [pair.variant, pair.main, ...(pair.info ? [pair.info] : [])])
  const crossRatio = cross ? cross.variant.perSecond / cross.main.perSecond : undefined
  const backlogs = pairs.map((pair) => pair.variant.backlog).filter((n) => n !== undefined)
  return {
    ...variant,
    connections: variant.connections ?? 10,
    rounds: pairs.length,
    ours: figures(pairs.map((pair) => pair.variant)),
    main: against('main', variant.main, variant.framework, pairs),
    info: variant.info ? against('info', variant.info, variant.framework, pairs) : undefined,
    backlogMax: backlogs.length ? Math.max(...backlogs) : undefined,
    non2xx: sides.reduce((sum, row) => sum + row.non2xx, 0),
    errors: sides.reduce((sum, row) => sum + row.errors, 0),
    flaggedRounds: sides.filter((row) => row.flagged).length,
    othersMax: Math.max(0, ...sides.map((row) => row.others ?? 0)),
    cross: cross && {
      ratio: crossRatio,
      cpuOverUs: cross.variant.cpuPerRequestUs - cross.main.cpuPerRequestUs,
      agree: Math.abs(crossRatio - median(pairs.map((pair) => pair.variant.perSecond / pair.main.perSecond))) <= AGREEMENT,
      loadBound: cross.main.loadBound || cross.variant.loadBound,
      non2xx: cross.main.non2xx + cross.variant.non2xx,
      errors: cross.main.errors + cross.variant.errors,
    },
    pairs,
    crossPairs: cross,
  }
}

/** The longest an inbox server's worker may take to drain what a round left it, untimed. */
const SETTLE_LIMIT_MS = 120_000

/**
 * Waits, untimed, until no inbox-mode server has entries left from its last round: its worker,
 * pinned to the same core, would otherwise drain them during the next round of another server and
 * be counted as that server's competition (request-mode rounds looked slower than they are).
 */
async function settleInboxes(servers) {
  const until = performance.now() + SETTLE_LIMIT_MS
  for (const server of servers) {
    if (!server.mode?.includes('inbox') || server.mode.endsWith('-web')) continue
    while ((await server.mark()).pending > 0) {
      if (performance.now() > until) throw new Error(`the ${server.mode} server's inbox did not drain within ${SETTLE_LIMIT_MS / 1000} s`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}

/** The servers the variants need, one per framework and mode, all started at once (idle ones cost nothing). */
async function startServers(pinning, variants, services) {
  const keys = [...new Set(variants.flatMap((v) => [v.info, v.main, v.mode].filter(Boolean).map((mode) => `${v.framework} ${mode}`)))]
  const started = await Promise.allSettled(keys.map((key) => startServer(pinning, ...key.split(' '), { services })))
  const servers = started.filter((result) => result.status === 'fulfilled').map((result) => result.value)
  const failed = started.find((result) => result.status === 'rejected')
  if (failed) {
    await Promise.all(servers.map((server) => server.stop()))
    throw failed.reason
  }
  return { servers, serverOf: (framework, mode) => servers[keys.indexOf(`${framework} ${mode}`)] }
}

/**
 * Runs the selected variants in order, each in rounds with its baselines.
 * @returns {Promise<object[]>} one summary per variant, in the order given
 */
export async function runHttpBench({
  pinning,
  services,
  variants = HTTP_VARIANTS,
  rounds,
  seconds,
  warmupSeconds,
  crossSeconds,
  crossOnce = false,
  maxPool,
  onRound,
}) {
  const loadChild = spawnNode(pinning, pinning.loadCore, [join(here, 'loadgen.js')], { stdio: ['ignore', 'inherit', 'pipe', 'ipc'] })
  const load = ipcChild(loadChild, 'load generator')
  const summaries = []
  const crossed = new Set()
  let servers = []
  try {
    const started = await startServers(pinning, variants, services)
    servers = started.servers
    const { serverOf } = started
    if (warmupSeconds > 0) {
      for (const server of servers)
        await round(load, server, { pinning, maxPool, connections: 10, tool: 'raw', kind: 'distinct', seconds: warmupSeconds })
    }
    for (const variant of variants) {
      const options = { pinning, maxPool, connections: variant.connections ?? 10 }
      const sides = [
        ...(variant.info ? [['info', serverOf(variant.framework, variant.info), 'distinct']] : []),
        ['main', serverOf(variant.framework, variant.main), variant.kind],
        ['variant', serverOf(variant.framework, variant.mode), variant.kind],
      ]
      const pairs = []
      for (let r = 0; r < rounds; r++) {
        const pair = {}
        for (const [side, server, kind] of sides) {
          await settleInboxes(servers)
          pair[side] = await round(load, server, { ...options, tool: 'raw', kind, seconds })
        }
        pairs.push(pair)
        onRound?.(variant, r, pair)
      }
      let cross
      // crossOnce (the smoke run): only the first variant of each framework gets the cross-check.
      if (crossSeconds > 0 && !(crossOnce && crossed.has(variant.framework))) {
        crossed.add(variant.framework)
        cross = {}
        for (const [side, server, kind] of sides.slice(-2))
          cross[side] = await round(load, server, { ...options, tool: 'autocannon', kind, seconds: crossSeconds })
      }
      const summary = summarize(variant, pairs, cross)
      const ours = serverOf(variant.framework, variant.mode)
      if (variant.mode.startsWith('sqlite') && ours.dbPath && !existsSync(ours.dbPath)) {
        summary.storeProblem = 'the default store wrote no file at EMAIL_WEBHOOKS_DB: it is not the durable SQLite store'
      }
      summaries.push(summary)
    }
  } finally {
    await Promise.all([...servers.map((server) => server.stop()), load.stop()])
  }
  return summaries
}

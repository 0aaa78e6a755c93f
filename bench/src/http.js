/**
 * HTTP: each variant (our adapter with a store) is paired with its bare framework baseline and
 * measured in interleaved rounds (bare, variant, bare, variant, …) after a warm-up. Servers run
 * in their own processes pinned to one core, the load generator in another pinned to the other
 * (pinning.js); every round sends pre-signed events from a pool built before it. Server CPU per
 * request comes from the server's own `process.cpuUsage()` across the round (over IPC, untimed).
 * After the rounds, one autocannon pair (fixed count, timed end to end) cross-checks the ratio.
 */
import { once } from 'node:events'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { median } from './harness.js'
import { cpuTicks, othersShare, spawnNode } from './pinning.js'

const here = fileURLToPath(new URL('.', import.meta.url))

export const BARE_LABELS = {
  express: 'Express 5 bare (express.raw → 200)',
  'express lean': 'Express 5 lean bare (body read by hand → res.end)',
  hono: 'Hono on @hono/node-server bare (arrayBuffer → 200)',
  'hono memory': 'Hono + memory store, ordering off',
  'hono sqlite': 'Hono + SQLite, ordering off',
  'express sqlite': 'Express 5 + SQLite, ordering off',
}
/** A load generator busier than this may be what limits a round (reported, not flagged). */
const LOAD_BOUND = 0.8

export const HTTP_VARIANTS = [
  { id: 'express-memory', framework: 'express', mode: 'memory', kind: 'distinct', label: 'Express 5 + memory store' },
  // Information, not an issue target: the same, against the leanest Express route (body read by
  // hand, res.end) instead of express.raw + res.json, which cost more than our adapter's reading.
  {
    id: 'express-memory-lean',
    framework: 'express',
    mode: 'memory',
    bare: 'lean',
    kind: 'distinct',
    label: 'Express 5 + memory store, vs a lean bare route (body read by hand, res.end)',
  },
  { id: 'express-sqlite', framework: 'express', mode: 'sqlite', kind: 'distinct', label: 'Express 5 + default SQLite store' },
  { id: 'express-sqlite-dup', framework: 'express', mode: 'sqlite', kind: 'duplicates', label: 'Express 5 + SQLite, 50 % duplicates' },
  { id: 'hono-memory', framework: 'hono', mode: 'memory', kind: 'distinct', label: 'Hono (node-server) + memory store' },
  { id: 'hono-sqlite', framework: 'hono', mode: 'sqlite', kind: 'distinct', label: 'Hono (node-server) + default SQLite store' },
  { id: 'hono-sqlite-dup', framework: 'hono', mode: 'sqlite', kind: 'duplicates', label: 'Hono (node-server) + SQLite, 50 % duplicates' },
  // The cost of ordering: the same adapter and store with `ordering: true`, paired with ordering off
  // (the "bare" side of these pairs). Every event is of a new email: each writes a mark and a lock.
  {
    id: 'hono-memory-ordering',
    framework: 'hono',
    mode: 'memory-ordered',
    bare: 'memory',
    kind: 'distinct',
    label: 'Hono + memory store, ordering: true vs off',
  },
  {
    id: 'hono-sqlite-ordering',
    framework: 'hono',
    mode: 'sqlite-ordered',
    bare: 'sqlite',
    kind: 'distinct',
    label: 'Hono + SQLite, ordering: true vs off',
  },
  {
    id: 'express-sqlite-ordering',
    framework: 'express',
    mode: 'sqlite-ordered',
    bare: 'sqlite',
    kind: 'distinct',
    label: 'Express 5 + SQLite, ordering: true vs off',
  },
]

/** Two ratios from the two load generators agree when they differ by at most this much. */
export const AGREEMENT = 0.1
const FIRST_RATE_GUESS = 20_000

/** A child process spoken to over IPC: `request(message)` resolves with the next reply. */
function ipcChild(child, name) {
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

async function startServer(pinning, framework, mode) {
  const dir = mode.startsWith('sqlite') ? mkdtempSync(join(tmpdir(), 'email-webhooks-http-')) : undefined
  const dbPath = dir && join(dir, 'dedup.db')
  const env = { ...process.env, ...(dbPath ? { EMAIL_WEBHOOKS_DB: dbPath } : {}) }
  const child = spawnNode(pinning, pinning.serverCore, [join(here, 'server.js'), framework, mode], {
    env,
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  })
  const ipc = ipcChild(child, `server ${framework} ${mode}`)
  const { port } = await ipc.next()
  return {
    port,
    dbPath,
    rate: FIRST_RATE_GUESS,
    mark: () => ipc.request({ type: 'mark' }),
    async stop() {
      await ipc.stop()
      if (dir) rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** One measured round against `server`: pool built first, then CPU marks around the load. */
async function round(load, server, { pinning, tool, kind, seconds, connections, maxPool }) {
  const wanted = Math.ceil(server.rate * seconds * (tool === 'raw' ? 1.5 : 1)) + (tool === 'raw' ? 1_000 : 0)
  const size = Math.max(connections * 4, Math.min(maxPool ?? Number.POSITIVE_INFINITY, wanted))
  const { buildMs } = await load.request({ type: 'prepare', tool, port: server.port, kind, size, connections, seconds })
  const core = pinning.enabled ? pinning.serverCore : undefined
  const before = await server.mark()
  const ticks = cpuTicks(core)
  const result = await load.request({ type: 'go' })
  const ticksAfter = cpuTicks(core)
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
    cpuPerRequestUs: served > 0 ? cpuUs / served : 0,
    serverBusy,
    // The raw client counts its answers; the server counts what it received: they must agree.
    flagged: result.non2xx > 0 || result.errors > 0 || (tool === 'raw' && served !== result.requests),
    loadBound: result.loadBusy >= LOAD_BOUND,
  }
}

/** Medians and ratios of one variant's paired rounds. */
export function summarize(variant, pairs, cross) {
  const bare = pairs.map((pair) => pair.bare)
  const ours = pairs.map((pair) => pair.variant)
  const m = (rows, key) => median(rows.map((row) => row[key]))
  const ratio = median(pairs.map((pair) => pair.variant.perSecond / pair.bare.perSecond))
  const crossRatio = cross ? cross.variant.perSecond / cross.bare.perSecond : undefined
  return {
    ...variant,
    rounds: pairs.length,
    ratio,
    bare: { perSecond: m(bare, 'perSecond'), p50Us: m(bare, 'p50Us'), p99Us: m(bare, 'p99Us'), cpuUs: m(bare, 'cpuPerRequestUs') },
    ours: { perSecond: m(ours, 'perSecond'), p50Us: m(ours, 'p50Us'), p99Us: m(ours, 'p99Us'), cpuUs: m(ours, 'cpuPerRequestUs') },
    p99Ratio: m(ours, 'p99Us') / Math.max(m(bare, 'p99Us'), 1),
    cpuOverBareUs: m(ours, 'cpuPerRequestUs') - m(bare, 'cpuPerRequestUs'),
    non2xx: [...bare, ...ours].reduce((sum, row) => sum + row.non2xx, 0),
    errors: [...bare, ...ours].reduce((sum, row) => sum + row.errors, 0),
    flaggedRounds: [...bare, ...ours].filter((row) => row.flagged).length,
    othersMax: Math.max(0, ...[...bare, ...ours].map((row) => row.others ?? 0)),
    cross: cross && {
      ratio: crossRatio,
      cpuOverBareUs: cross.variant.cpuPerRequestUs - cross.bare.cpuPerRequestUs,
      agree: Math.abs(crossRatio - ratio) <= AGREEMENT,
      loadBound: cross.bare.loadBound || cross.variant.loadBound,
      non2xx: cross.bare.non2xx + cross.variant.non2xx,
      errors: cross.bare.errors + cross.variant.errors,
    },
    pairs,
    crossPairs: cross,
  }
}

/**
 * Runs the selected variants in order, each paired with its framework's bare server.
 * @returns {Promise<object[]>} one summary per variant, in HTTP_VARIANTS order
 */
export async function runHttpBench({
  pinning,
  variants = HTTP_VARIANTS,
  rounds,
  seconds,
  warmupSeconds,
  crossSeconds,
  connections = 10,
  maxPool,
  onRound,
}) {
  const loadChild = spawnNode(pinning, pinning.loadCore, [join(here, 'loadgen.js')], { stdio: ['ignore', 'inherit', 'pipe', 'ipc'] })
  const load = ipcChild(loadChild, 'load generator')
  // One server per framework and mode, all started at once (idle ones cost nothing): the bare
  // server serves all its framework's pairs; the 50 % duplicates variant reuses the SQLite server.
  const keys = [...new Set(variants.flatMap((v) => [`${v.framework} ${v.bare ?? 'bare'}`, `${v.framework} ${v.mode}`]))]
  const started = await Promise.allSettled(keys.map((key) => startServer(pinning, ...key.split(' '))))
  const servers = started.filter((result) => result.status === 'fulfilled').map((result) => result.value)
  const summaries = []
  try {
    const failed = started.find((result) => result.status === 'rejected')
    if (failed) throw failed.reason
    const serverOf = (framework, mode) => servers[keys.indexOf(`${framework} ${mode}`)]
    const options = { pinning, connections, maxPool }
    if (warmupSeconds > 0) {
      for (const server of servers) await round(load, server, { ...options, tool: 'raw', kind: 'distinct', seconds: warmupSeconds })
    }
    for (const variant of variants) {
      const bare = serverOf(variant.framework, variant.bare ?? 'bare')
      const server = serverOf(variant.framework, variant.mode)
      const pairs = []
      for (let r = 0; r < rounds; r++) {
        const pair = { bare: await round(load, bare, { ...options, tool: 'raw', kind: 'distinct', seconds }) }
        pair.variant = await round(load, server, { ...options, tool: 'raw', kind: variant.kind, seconds })
        pairs.push(pair)
        onRound?.(variant, r, pair)
      }
      let cross
      if (crossSeconds > 0) {
        cross = { bare: await round(load, bare, { ...options, tool: 'autocannon', kind: 'distinct', seconds: crossSeconds }) }
        cross.variant = await round(load, server, { ...options, tool: 'autocannon', kind: variant.kind, seconds: crossSeconds })
      }
      const summary = summarize(variant, pairs, cross)
      if (server.dbPath && !existsSync(server.dbPath)) {
        summary.storeProblem = 'the default store wrote no file at EMAIL_WEBHOOKS_DB: it is not the durable SQLite store'
      }
      summaries.push(summary)
    }
  } finally {
    await Promise.all([...servers.map((server) => server.stop()), load.stop()])
  }
  return summaries
}

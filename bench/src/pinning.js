/**
 * Core pinning for the HTTP benchmark: the server on one core, the load generator on another,
 * with `taskset` (util-linux) where the process may use at least two cores. Falls back to no
 * pinning, and says why, when taskset is missing, only one core is allowed, or BENCH_PIN=0.
 */
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

/** Expands a CPU list such as `0-2,5` into core numbers. */
export function parseCpuList(text) {
  const cores = []
  for (const part of text.trim().split(',')) {
    const [from, to] = part.split('-').map((n) => Number.parseInt(n, 10))
    if (!Number.isInteger(from)) continue
    for (let core = from; core <= (Number.isInteger(to) ? to : from); core++) cores.push(core)
  }
  return cores
}

/**
 * Decides where the server and the load generator run.
 * @returns {{ enabled: boolean, serverCore?: number, loadCore?: number, allowed: number[], note: string }}
 */
export function detectPinning(env = process.env) {
  if (env.BENCH_PIN === '0')
    return { enabled: false, allowed: [], note: 'pinning off (BENCH_PIN=0): server and load generator share all cores' }
  const probe = spawnSync('taskset', ['-cp', String(process.pid)], { encoding: 'utf8' })
  if (probe.error || probe.status !== 0) {
    return {
      enabled: false,
      allowed: [],
      note: 'pinning off: `taskset` not found (install util-linux); server and load generator share all cores, figures are less steady',
    }
  }
  const allowed = parseCpuList(probe.stdout.slice(probe.stdout.lastIndexOf(':') + 1))
  if (allowed.length < 2) {
    return { enabled: false, allowed, note: `pinning off: only ${allowed.length} core allowed; server and load generator share it` }
  }
  const [serverCore, loadCore] = allowed
  return {
    enabled: true,
    serverCore,
    loadCore,
    allowed,
    note: `server pinned to core ${serverCore}, load generator to core ${loadCore} (taskset)`,
  }
}

/** Spawns `node <args>` on `core` when pinning is enabled, else unpinned. */
export function spawnNode(pinning, core, args, options) {
  if (pinning.enabled && core !== undefined) return spawn('taskset', ['-c', String(core), process.execPath, ...args], options)
  return spawn(process.execPath, args, options)
}

/**
 * Pins a running process (all its threads; threads it starts later inherit it) to `core`, when
 * pinning is enabled. Servers start unpinned, on every core, and are pinned once they listen:
 * many servers starting at once would otherwise queue on the one core.
 */
export function pinProcess(pinning, core, pid) {
  if (!pinning.enabled || core === undefined) return
  const result = spawnSync('taskset', ['-a', '-p', '-c', String(core), String(pid)], { stdio: 'ignore' })
  if (result.status !== 0) throw new Error(`taskset could not pin process ${pid} to core ${core}`)
}

/**
 * CPU ticks of one core (or of the whole machine when `core` is undefined) from /proc/stat:
 * `{ busy, total }`, or undefined where /proc/stat is not there. Busy counts every non-idle state.
 */
export function cpuTicks(core) {
  let text
  try {
    text = readFileSync('/proc/stat', 'utf8')
  } catch {
    return undefined
  }
  const name = core === undefined ? 'cpu' : `cpu${core}`
  const line = text.split('\n').find((l) => l.startsWith(`${name} `))
  if (!line) return undefined
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number)
  const busy = user + nice + system + irq + softirq + (steal || 0)
  return { busy, total: busy + idle + (iowait || 0) }
}

/**
 * The share of a core (in cores) that processes other than ours used between two `cpuTicks`
 * readings, given what our own processes used over that time.
 */
export function othersShare(before, after, ourCores, cores = 1) {
  if (!before || !after || after.total <= before.total) return undefined
  return Math.max(0, ((after.busy - before.busy) / (after.total - before.total)) * cores - ourCores)
}

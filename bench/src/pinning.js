/**
 * Core pinning for the HTTP benchmark: the server on one core, the load generator on another,
 * with `taskset` (util-linux) where the process may use at least two cores. Falls back to no
 * pinning, and says why, when taskset is missing, only one core is allowed, or BENCH_PIN=0.
 */
import { spawn, spawnSync } from 'node:child_process'

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

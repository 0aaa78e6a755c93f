/**
 * The plumbing of tests with several OS processes: the real servers of a test file, the worker
 * processes it forks (store-child.mjs, or a script of its own) and kills after each test, and their
 * IPC messages. The steps of the cases sqlite-processes.test.ts and server-processes.test.ts share
 * are in process-cases.ts.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ClaimResult, DedupStore } from '@email-webhooks/core'
import { afterAll, afterEach, beforeAll } from 'vitest'
import { type RunningServer, startPostgresAndRedis } from '../services/servers.js'

const STORE_CHILD = join(dirname(fileURLToPath(import.meta.url)), 'store-child.mjs')
export const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }

export type ServerKind = 'postgres' | 'redis'
/** What store-child.mjs runs on: a SQLite file, or a PostgreSQL or Redis server. */
export type StoreKind = 'sqlite' | ServerKind

/** A PostgreSQL and a Redis started before this file's tests and stopped after them. */
export function useServers(): Partial<Record<ServerKind, RunningServer>> {
  const servers: Partial<Record<ServerKind, RunningServer>> = {}
  beforeAll(async () => {
    Object.assign(servers, await startPostgresAndRedis())
  })
  afterAll(async () => {
    await Promise.all([servers.postgres?.stop(), servers.redis?.stop()])
  })
  return servers
}

/** The processes this file forks: add each to the set; those still running after a test are killed with SIGKILL. */
export function trackChildren(): Set<ChildProcess> {
  const children = new Set<ChildProcess>()
  afterEach(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    children.clear()
  })
  return children
}

/**
 * A function that forks store-child.mjs (`<kind> <target> <mode> ...args`, see there) with its
 * keys under `prefix`, and tracks it as in `trackChildren`.
 */
export function storeChildren(): (kind: StoreKind, target: string, prefix: string, ...args: string[]) => ChildProcess {
  const children = trackChildren()
  return (kind, target, prefix, ...args) => {
    const child = fork(STORE_CHILD, [kind, target, ...args], {
      cwd: dirname(STORE_CHILD),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, KEY_PREFIX: prefix },
    })
    children.add(child)
    return child
  }
}

export type Message =
  | { type: 'ready' }
  | { type: 'result'; acquired: string[]; duplicate: number; inFlight: number }
  | { type: 'claimed'; status: ClaimResult['status']; attempt: number; before: number; after: number }
  | { type: 'completed'; key: string; ok: boolean }
  | { type: 'drained'; takes: InboxTake[] }
  | { type: 'taken'; key?: string; attempt?: number; before: number; after: number }
/** One take of an inbox-child.mjs 'drain' worker: its lease, when it was taken, and when its finish was sent (µs of the machine's monotonic clock). */
export interface InboxTake {
  key: string
  attempt: number
  orderKey?: string
  createdAtMs?: number
  takenAt: number
  finishingAt: number
  finished: boolean
}
export type RaceReport = Extract<Message, { type: 'result' }>
export type Claimed = Extract<Message, { type: 'claimed' }>

export function nextMessage<T extends Message['type']>(
  child: ChildProcess,
  type: T,
  timeoutMs = 20_000,
): Promise<Extract<Message, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`no '${type}' message within ${timeoutMs} ms`)), timeoutMs)
    const onMessage = (message: Message) => {
      if (message.type === type) done(undefined, message as Extract<Message, { type: T }>)
    }
    const onExit = (code: number | null, signal: string | null) => done(new Error(`child exited (${code ?? signal}) before '${type}'`))
    function done(error?: Error, message?: Extract<Message, { type: T }>) {
      clearTimeout(timer)
      child.off('message', onMessage)
      child.off('exit', onExit)
      if (error) reject(error)
      else resolve(message as Extract<Message, { type: T }>)
    }
    child.on('message', onMessage)
    child.once('exit', onExit)
  })
}

/** Kills the child with SIGKILL (unless it has exited already) and resolves to the signal it ended by. */
export function killed(child: ChildProcess): Promise<string | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.signalCode)
    else child.once('exit', (_code, signal) => resolve(signal))
    child.kill('SIGKILL')
  })
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Runs `fn` on the store, then closes the store. */
export async function withStore<S extends DedupStore>(store: S, fn: (store: S) => Promise<void>): Promise<void> {
  try {
    await fn(store)
  } finally {
    await store.close?.()
  }
}

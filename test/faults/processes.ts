/**
 * Receiver processes of the fault suite (receiver.mjs): started plainly or under strace (which then
 * injects the disk's faults into them), killed with SIGKILL, and all stopped after each test.
 */
import { type ChildProcess, fork, spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { TEST_SECRET } from '@email-webhooks/core/testing'
import { afterEach } from 'vitest'
import { ended } from '../support/pid.js'
import { LONG } from './figures.js'

const RECEIVER = join(dirname(fileURLToPath(import.meta.url)), 'receiver.mjs')
/** Children started (a receiver, or strace running one), with the receiver's own pid once known. */
const started = new Map<ChildProcess, number | undefined>()

// biome-ignore lint/suspicious/noExplicitAny: IPC messages are plain JSON checked by the tests.
export type Message = { type: string; [key: string]: any }

export type StoreConfig =
  | { kind: 'default'; path: string }
  | { kind: 'sqlite'; path: string }
  | { kind: 'postgres'; url: string }
  | { kind: 'redis'; url: string }

export interface ReceiverConfig {
  adapter: 'express' | 'hono'
  store: StoreConfig
  /**
   * Handler runs, appended and fsync'd: `B <tag> <id> <attempt> <email id> <source>` and
   * `E <tag> <id> <ms since the epoch> <email id> <source>` (`data.id`, and `ctx.source`: sender or reconcile).
   */
  journal: string
  /** The receiver's log lines. */
  log: string
  /** Names this process in the journal. */
  tag: string
  port?: number
  lifetimeMs?: number
  /** Receiver options; `ordering: true` where the scenario reconciles (RECONCILABLE in run.ts). */
  options?: {
    leaseMs?: number
    handlerTimeoutMs?: number
    storeTimeoutMs?: number
    retentionMs?: number
    ordering?: boolean
    mode?: 'request' | 'inbox'
    inbox?: { leaseMs?: number; retryBaseMs?: number; pollMs?: number; concurrency?: number; handlerTimeoutMs?: number }
  }
  /** The store's first n completes never answer (a stalled call; the store itself works). */
  stallCompletes?: number
  /** The first complete of each slow event (data.slowMs) never answers. */
  stallSlowCompletes?: boolean
}

export interface ReceiverProcess {
  config: ReceiverConfig
  child: ChildProcess
  /** The receiver's own pid (under strace, not strace's). */
  pid: number
  port: number
  url: string
  /** Log lines received so far, as `<level> <line>`. */
  logs: string[]
  /** Sends an IPC command and waits for the receiver to have applied it. */
  command(cmd: Record<string, unknown>): Promise<Message>
  /** SIGKILL to the receiver; resolves once it is gone. */
  kill(): Promise<void>
  /** Under strace: SIGKILL to strace, which detaches from the receiver (it runs on, without the injected faults). */
  detachStrace(): Promise<void>
}

/** Resolves with the next IPC message of `type` (rejects after `timeoutMs` or if the child exits). */
export function next(child: ChildProcess, type: string, timeoutMs = 30_000): Promise<Message> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`no '${type}' message within ${timeoutMs} ms`)), timeoutMs)
    const onMessage = (message: Message) => {
      if (message.type === type) done(undefined, message)
    }
    const onExit = (code: number | null, signal: string | null) => done(new Error(`receiver exited (${code ?? signal}) before '${type}'`))
    function done(error?: Error, message?: Message) {
      clearTimeout(timer)
      child.off('message', onMessage)
      child.off('exit', onExit)
      if (error) reject(error)
      else resolve(message as Message)
    }
    child.on('message', onMessage)
    child.once('exit', onExit)
  })
}

const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null

/**
 * Starts receiver.mjs and waits until it listens. With `strace`, the receiver runs under
 * `strace <args> node receiver.mjs` (its IPC channel is inherited through strace).
 */
export async function startReceiver(
  config: ReceiverConfig,
  options: { strace?: string[]; env?: Record<string, string> } = {},
): Promise<ReceiverProcess> {
  // A receiver ends itself after its lifetime (default 5 min), so a failed run never leaves it
  // behind; the long runs (npm run chaos) take longer than that, their scenarios up to 15 min.
  const argument = JSON.stringify({ secret: TEST_SECRET, ...(LONG ? { lifetimeMs: 20 * 60_000 } : {}), ...config })
  const stdio: ['ignore', 'inherit', 'inherit', 'ipc'] = ['ignore', 'inherit', 'inherit', 'ipc']
  const env = { ...process.env, ...options.env }
  const cwd = dirname(RECEIVER)
  const child = options.strace
    ? spawn('strace', [...options.strace, process.execPath, RECEIVER, argument], { cwd, stdio, env })
    : fork(RECEIVER, [argument], { cwd, stdio, env })
  started.set(child, undefined)
  const logs: string[] = []
  child.on('message', (message: Message) => {
    if (message.type === 'log') logs.push(`${message.level} ${message.line}`)
  })
  const listening = await next(child, 'listening', 60_000)
  const pid = Number(listening.pid ?? child.pid)
  if (started.has(child)) started.set(child, pid)
  return {
    config,
    child,
    pid,
    port: listening.port,
    url: `http://127.0.0.1:${listening.port}/hooks`,
    logs,
    async command(cmd) {
      const answer = next(child, cmd.cmd === 'usage' ? 'usage' : 'done', 10_000)
      child.send(cmd)
      return answer
    },
    async kill() {
      signal(pid)
      if (child.pid !== pid) await stopped(child)
      await gone(pid)
      if (running(child)) await stopped(child)
      started.delete(child)
    },
    async detachStrace() {
      if (child.pid !== pid) await stopped(child)
    },
  }
}

function signal(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL')
  } catch {}
}

function stopped(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (!running(child)) return resolve()
    child.once('exit', () => resolve())
    child.kill('SIGKILL')
  })
}

/** Resolves once `pid` has ended (at most 10 s). */
async function gone(pid: number): Promise<void> {
  for (let waited = 0; waited < 10_000 && !ended(pid); waited += 10) await new Promise((resolve) => setTimeout(resolve, 10))
}

/** Kills (SIGKILL) every receiver this suite started that is still running. */
export function killAll(): void {
  for (const [child, pid] of started) {
    if (pid !== undefined && pid !== child.pid) signal(pid)
    if (running(child)) child.kill('SIGKILL')
  }
  started.clear()
}

afterEach(killAll)

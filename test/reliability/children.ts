/**
 * Child processes of the soak and crash suites: receiver-child.mjs (Express or Hono with the
 * SQLite store, journaling each handler run) and load-child.mjs (the load generator).
 */
import { type ChildProcess, fork } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const HERE = dirname(fileURLToPath(import.meta.url))
const started = new Set<ChildProcess>()

// biome-ignore lint/suspicious/noExplicitAny: IPC messages are plain JSON checked by the tests.
export type Message = { type: string; [key: string]: any }

export function spawn(script: 'receiver-child.mjs' | 'load-child.mjs', args: string[]): ChildProcess {
  const child = fork(join(HERE, script), args, { cwd: HERE, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  started.add(child)
  child.once('exit', () => started.delete(child))
  return child
}

/** Kills (SIGKILL) every child these suites started that is still running. */
export function killAll(): void {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
}

export function next(child: ChildProcess, type: string, timeoutMs = 30_000): Promise<Message> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`no '${type}' message within ${timeoutMs} ms`)), timeoutMs)
    const onMessage = (message: Message) => {
      if (message.type === type) done(undefined, message)
    }
    const onExit = (code: number | null, signal: string | null) => done(new Error(`child exited (${code ?? signal}) before '${type}'`))
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

export function killed(child: ChildProcess): Promise<string | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.signalCode)
    child.once('exit', (_code, signal) => resolve(signal))
    child.kill('SIGKILL')
  })
}

export interface ReceiverProcess {
  child: ChildProcess
  url: string
  port: number
  rss: number
}

/** Starts receiver-child.mjs and waits until it listens. */
export async function startReceiverProcess(options: {
  adapter: 'express' | 'hono'
  db: string
  journal: string
  tag: string
  port?: number
  leaseMs?: number
  maxHandlerDelayMs?: number
  lifetimeMs?: number
}): Promise<ReceiverProcess> {
  const child = spawn('receiver-child.mjs', [
    options.adapter,
    options.db,
    options.journal,
    options.tag,
    String(options.port ?? 0),
    String(options.leaseMs ?? 30_000),
    String(options.maxHandlerDelayMs ?? 0),
    String(options.lifetimeMs ?? 300_000),
  ])
  const listening = await next(child, 'listening')
  return { child, url: `http://127.0.0.1:${listening.port}/hooks`, port: listening.port, rss: listening.rss }
}

export async function rssOf(receiver: ReceiverProcess): Promise<number> {
  const answer = next(receiver.child, 'rss')
  receiver.child.send('rss')
  return (await answer).rss
}

/** Handler runs per event id from the journal: begun and ended, per process tag. */
export interface JournalEntry {
  begun: string[]
  ended: string[]
}

export function readJournal(path: string): Map<string, JournalEntry> {
  const entries = new Map<string, JournalEntry>()
  let text = ''
  try {
    text = readFileSync(path, 'utf8')
  } catch {}
  for (const line of text.split('\n')) {
    const [kind, tag, id] = line.split(' ')
    if (!kind || !tag || !id) continue
    const entry = entries.get(id) ?? { begun: [], ended: [] }
    if (kind === 'B') entry.begun.push(tag)
    else entry.ended.push(tag)
    entries.set(id, entry)
  }
  return entries
}

export const MiB = 1024 * 1024

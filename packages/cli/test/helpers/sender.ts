// Test helpers for `email-webhooks sender`: the command as a process whose --json lines are read
// as they come (and awaited), driven through its stdin; and the Express example as a receiver that
// can be stopped and started again on the same port with the same SQLite file.
import { type ChildProcess, spawn } from 'node:child_process'
import { join, resolve } from 'node:path'
import { expect } from 'vitest'
import { BIN, SECRET } from './cli.js'

const ROOT = resolve(import.meta.dirname, '../../../..')
const BASE_ENV: Record<string, string> = Object.fromEntries(
  ['PATH', 'NODE_OPTIONS', 'EMAIL_WEBHOOKS_BETTER_SQLITE3_DIR'].flatMap((name) => {
    const value = process.env[name]
    return value === undefined ? [] : [[name, value]]
  }),
)

/** One `--json` line of the sender. */
export type SenderLine = { kind: string } & Record<string, unknown>

/** A running `email-webhooks sender --json`. */
export interface SenderProcess {
  child: ChildProcess
  lines: SenderLine[]
  stderr(): string
  /** Resolves with the first line (from `from` on) that matches; rejects after `timeoutMs`, naming what it saw. */
  waitFor(match: (line: SenderLine) => boolean, what: string, timeoutMs?: number, from?: number): Promise<SenderLine>
  /** Writes one control line to its stdin. */
  send(control: string): void
  /** `quit`, then the exit code. */
  quit(): Promise<number | null>
}

/** Starts `email-webhooks sender <args> --json` in `cwd` with `env` (a clean environment otherwise). */
export function startSender(args: readonly string[], options: { cwd: string; env?: Record<string, string> }): SenderProcess {
  const child = spawn(process.execPath, [BIN, 'sender', ...args, '--json'], {
    cwd: options.cwd,
    env: { ...BASE_ENV, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  const lines: SenderLine[] = []
  const waiters = new Set<() => void>()
  let out = ''
  let err = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString()
    const parts = out.split('\n')
    out = parts.pop() ?? ''
    for (const part of parts) if (part.trim() !== '') lines.push(JSON.parse(part) as SenderLine)
    for (const wake of waiters) wake()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString()
  })
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)))
  return {
    child,
    lines,
    stderr: () => err,
    waitFor(match, what, timeoutMs = 20_000, from = 0) {
      return new Promise((done, fail) => {
        const check = (): boolean => {
          const found = lines.slice(from).find(match)
          if (!found) return false
          waiters.delete(wake)
          clearTimeout(timer)
          done(found)
          return true
        }
        const wake = (): void => void check()
        const timer = setTimeout(() => {
          waiters.delete(wake)
          fail(new Error(`no ${what} within ${timeoutMs} ms; last lines: ${JSON.stringify(lines.slice(-5))}; stderr: ${err}`))
        }, timeoutMs)
        if (!check()) waiters.add(wake)
      })
    },
    send(control) {
      child.stdin?.write(`${control}\n`)
    },
    async quit() {
      child.stdin?.write('quit\n')
      const code = await exited
      // Whatever it printed, the secret the test gave it never appears.
      expect(JSON.stringify(lines) + err).not.toContain(SECRET)
      return code
    },
  }
}

/** The Express example on a fixed port and SQLite file, so that it can be stopped and started again. */
export interface Receiver {
  url: string
  /** Everything it printed on stdout, across its runs. */
  output(): string
  start(): Promise<void>
  stop(): Promise<void>
}

/** The Express example (ordering on) as the walkthrough runs it: `EMAIL_WEBHOOK_SECRET=… EMAIL_WEBHOOKS_DB=… PORT=… node examples/express/src/server.js`. */
export function expressReceiver(port: number, db: string): Receiver {
  let child: ChildProcess | undefined
  let log = ''
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    output: () => log,
    start() {
      const started = spawn(process.execPath, [join(ROOT, 'examples/express/src/server.js')], {
        env: { ...BASE_ENV, EMAIL_WEBHOOK_SECRET: SECRET, PORT: String(port), EMAIL_WEBHOOKS_DB: db },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      child = started
      const from = log.length
      return new Promise((done, fail) => {
        const timer = setTimeout(() => fail(new Error('the Express example did not start')), 15_000)
        started.stdout?.on('data', (chunk: Buffer) => {
          log += chunk.toString()
          if (log.slice(from).includes(`listening on http://localhost:${port}/hooks\n`)) {
            clearTimeout(timer)
            done()
          }
        })
        started.once('exit', (code) => fail(new Error(`the Express example exited (${code})`)))
      })
    },
    async stop() {
      const running = child
      if (!running || running.exitCode !== null) return
      const exited = new Promise((done) => running.once('exit', done))
      running.kill('SIGTERM')
      await exited
    },
  }
}

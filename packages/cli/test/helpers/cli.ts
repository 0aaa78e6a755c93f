// Test helpers: start an example server (Express or Hono on Node) on a free port with a test
// secret and a temporary dedup database, and run the built CLI as a child process.
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { expect } from 'vitest'
import { gather } from '../../../../test/support/output.js'

const ROOT = resolve(import.meta.dirname, '../../../..')

/**
 * What a clean child environment keeps from ours: PATH, and the hook that points better-sqlite3 at
 * a build for this Node when the suite runs on another Node version (test/runtimes/node-versions.mjs).
 */
export const BASE_ENV: Record<string, string> = Object.fromEntries(
  ['PATH', 'NODE_OPTIONS', 'EMAIL_WEBHOOKS_BETTER_SQLITE3_DIR'].flatMap((name) => {
    const value = process.env[name]
    return value === undefined ? [] : [[name, value]]
  }),
)

/** The built bin, as `npx email-webhooks` runs it. */
export const BIN = join(ROOT, 'packages/cli/bin/email-webhooks.js')
/** The secret the example servers are started with in these tests. */
export const SECRET = 'whsec_cli_test_secret_5b2f1c0e9d8a'

export interface ExampleServer {
  name: string
  url: string
  /** What the server printed on stdout so far. */
  output(): string
  stop(): Promise<void>
}

export interface CliResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/** A port nothing listens on at the moment it is returned. */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer()
    server.once('error', fail)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? done(address.port) : fail(new Error('no port'))))
    })
  })
}

function waitForListening(child: ChildProcess, log: { text: string }): Promise<boolean> {
  return new Promise((done) => {
    const timer = setTimeout(() => done(false), 15_000)
    child.stdout?.on('data', (chunk: Buffer) => {
      log.text += chunk.toString()
      if (log.text.includes('listening on')) {
        clearTimeout(timer)
        done(true)
      }
    })
    child.once('exit', () => {
      clearTimeout(timer)
      done(false)
    })
  })
}

/** Starts examples/<name>/src/server.js on 127.0.0.1 at a free port; retries if the port was taken meanwhile. */
export async function startExample(name: 'express' | 'hono-node'): Promise<ExampleServer> {
  const dir = await mkdtemp(join(tmpdir(), `cli-${name}-`))
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort()
    const child = spawn(process.execPath, [join(ROOT, `examples/${name}/src/server.js`)], {
      env: { ...BASE_ENV, EMAIL_WEBHOOK_SECRET: SECRET, PORT: String(port), EMAIL_WEBHOOKS_DB: join(dir, 'dedup.db') },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const log = { text: '' }
    if (await waitForListening(child, log)) {
      return {
        name,
        url: `http://127.0.0.1:${port}/hooks`,
        output: () => log.text,
        async stop() {
          const exited = new Promise((done) => child.once('exit', done))
          child.kill('SIGTERM')
          await exited
          await rm(dir, { recursive: true, force: true })
        },
      }
    }
    child.kill('SIGKILL')
  }
  throw new Error(`the ${name} example did not start`)
}

export interface RunOptions {
  env?: Record<string, string>
  cwd?: string
  input?: string | Uint8Array
  /** Called once the process is running (e.g. to send it a signal). */
  onSpawn?: (child: ChildProcess) => void
}

/** Runs the built CLI with a clean environment (no inherited secret), collects its output and checks that the secret is not in it. */
export function runCli(args: readonly string[], options: RunOptions = {}): Promise<CliResult> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? tmpdir(),
      env: { ...BASE_ENV, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    const output = gather(child)
    child.once('error', fail)
    child.once('close', (code, signal) => {
      const [stdout, stderr] = [output.stdout(), output.stderr()]
      // Every run, whatever it tests: the secret never appears in the output.
      expect(stdout + stderr).not.toContain(SECRET)
      done({ code, signal, stdout, stderr })
    })
    // A command that exits before reading its input (a usage error) closes the pipe: EPIPE is no failure of the test.
    child.stdin.on('error', () => {})
    child.stdin.end(options.input ?? '')
    options.onSpawn?.(child)
  })
}

/** True when util-linux `script` is on PATH: it gives the CLI a terminal (TTY) to write to. */
export const HAS_SCRIPT: boolean = (process.env.PATH ?? '').split(':').some((dir) => existsSync(join(dir, 'script')))

/** Runs the built CLI inside a pseudo-terminal (stdout and stderr both a TTY, merged) with `script`. */
export function runCliInTty(args: readonly string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const quoted = [process.execPath, BIN, ...args].map((arg) => `'${arg.replaceAll("'", `'\\''`)}'`).join(' ')
  return new Promise((done, fail) => {
    const child = spawn('script', ['-qec', quoted, '/dev/null'], { cwd: tmpdir(), env: { ...BASE_ENV, TERM: 'xterm', ...env } })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
    })
    child.once('error', fail)
    child.once('close', (code) => {
      expect(output).not.toContain(SECRET)
      done({ code, output })
    })
  })
}

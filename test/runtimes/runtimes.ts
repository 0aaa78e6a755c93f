/**
 * Where the runtimes the tests use come from (npm, on first use: scripts/tools.mjs) and how the tests
 * start them: bounded in time, output collected, always on 127.0.0.1.
 */
import { spawn } from 'node:child_process'
import { realpathSync } from 'node:fs'
import { builtinModules, createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Metafile } from 'esbuild'
import { ensureTool } from '../../scripts/tools.mjs'
import { gather } from '../support/output.js'

export const RUNTIMES_DIR: string = dirname(fileURLToPath(import.meta.url))
export const ROOT: string = resolve(RUNTIMES_DIR, '../..')

/**
 * A runtime's binary, fetched from npm into the tool cache on first use (scripts/tools.mjs), so
 * that installing the workspace for the demo downloads none of them. The binary itself, not a
 * node_modules/.bin shim, which would leave the runtime running when a test stops the shim.
 */
export async function runtimeBin(name: 'bun' | 'deno' | 'node22' | 'node24'): Promise<string> {
  const tool = await ensureTool(name)
  return tool.bin as string
}

/** Miniflare 4 (needs Node ≥ 22: run it on `runtimeBin('node24')`), for `MINIFLARE_DIR`. */
export async function miniflareDir(): Promise<string> {
  return (await ensureTool('miniflare')).pkg
}

/** Node's built-in modules, bare and with the `node:` prefix. */
export const NODE_BUILTINS: ReadonlySet<string> = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]))

/**
 * The files and imports esbuild reaches from `contents` (an ES module importing the entries, resolved
 * from this folder) under the export `conditions`, as Bun, Deno, wrangler and browsers resolve the
 * packages' exports and imports maps. Nothing is written; Node built-ins and `external` stay external.
 * esbuild (a dependency of the runtimes suite) is loaded on first use only.
 */
export async function esbuildGraph(contents: string, conditions: string[], external: string[] = []): Promise<Metafile> {
  const { build } = await import('esbuild')
  const result = await build({
    stdin: { contents, resolveDir: RUNTIMES_DIR, loader: 'js' },
    bundle: true,
    write: false,
    metafile: true,
    format: 'esm',
    platform: 'neutral',
    conditions,
    mainFields: ['module', 'main'],
    // No tsconfig: packages/core/tsconfig.json maps #crypto to the Node sources for tsc only.
    tsconfigRaw: {},
    external: [...external, ...NODE_BUILTINS],
    logLevel: 'silent',
  })
  return result.metafile
}

/** See bun-tsconfig.json: keeps the workspace's tsconfig paths away from Bun. */
export const BUN_ARGS: string[] = [`--tsconfig-override=${join(RUNTIMES_DIR, 'bun-tsconfig.json')}`]

/** The folder of the installed better-sqlite3, which Deno runs are forbidden to read. */
export function betterSqlite3Dir(): string {
  return realpathSync(dirname(createRequire(join(ROOT, 'test/package.json')).resolve('better-sqlite3/package.json')))
}

/** Deno's permissions for our runs: the network on 127.0.0.1 and reading the repository, but not better-sqlite3. */
export function denoArgs(): string[] {
  return ['run', '--allow-net=127.0.0.1', `--allow-read=${ROOT}`, `--deny-read=${betterSqlite3Dir()}`, '--allow-env']
}

export interface RunResult {
  code: number | null
  stdout: string
  stderr: string
  ms: number
}

/** Runs a program to its end, killing it after `timeoutMs`. */
export function runToEnd(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const started = Date.now()
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] })
    const output = gather(child)
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolvePromise({ code, stdout: output.stdout(), stderr: output.stderr(), ms: Date.now() - started })
    })
  })
}

export interface Server {
  url: string
  output(): string
  stop(): Promise<void>
}

/**
 * Starts a server program and waits for the line that prints its URL (`http://127.0.0.1:<port>`).
 * The program must listen on port 0 (`PORT=0`) on 127.0.0.1.
 */
export function startServer(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<Server> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    let settled = false
    const exited = new Promise<void>((done) => child.once('close', () => done()))
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await Promise.race([exited, new Promise((done) => setTimeout(done, 5_000))])
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    }
    const timer = setTimeout(() => {
      if (settled) return
      settled = true
      void stop()
      reject(new Error(`${command} did not print its URL within ${options.timeoutMs} ms:\n${output}`))
    }, options.timeoutMs)
    const onData = (chunk: Buffer) => {
      output += chunk
      const match = /http:\/\/127\.0\.0\.1:(\d+)/.exec(output)
      if (match && !settled) {
        settled = true
        clearTimeout(timer)
        resolvePromise({ url: `http://127.0.0.1:${match[1]}`, output: () => output, stop })
      }
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.on('close', (code) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      reject(new Error(`${command} exited (${code}) before printing its URL:\n${output}`))
    })
  })
}

/** How many tests the dedup-store conformance suite registers for one store. */
export async function conformanceTestCount(): Promise<number> {
  const { dedupStoreConformance } = await import('@email-webhooks/core/testing')
  const { MemoryDedupStore } = await import('@email-webhooks/core')
  let count = 0
  dedupStoreConformance('count', { describe: (_name, fn) => fn(), it: () => void count++ }, { createStore: () => new MemoryDedupStore() })
  return count
}

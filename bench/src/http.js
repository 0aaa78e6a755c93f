/**
 * HTTP: each server variant runs in its own process, loaded by autocannon from another
 * process, 10 connections, 1 KB events, every request a distinct signed event.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = fileURLToPath(new URL('.', import.meta.url))

export const HTTP_VARIANTS = [
  { framework: 'express', server: 'express-bare', label: 'Express 5 bare (express.raw → 200)' },
  { framework: 'express', server: 'express-sqlite', label: "Express + emailWebhook, default SQLite store (durability 'full')" },
  { framework: 'express', server: 'express-memory', label: 'Express + emailWebhook, memory store' },
  { framework: 'express', server: 'express-sqlite', label: 'Express + emailWebhook, SQLite, 50% duplicates', duplicateRatio: 0.5 },
  { framework: 'hono', server: 'hono-bare', label: 'Hono on node-server bare (arrayBuffer → 200)' },
  { framework: 'hono', server: 'hono-sqlite', label: "Hono + emailWebhook, default SQLite store (durability 'full')" },
  { framework: 'hono', server: 'hono-memory', label: 'Hono + emailWebhook, memory store' },
  { framework: 'hono', server: 'hono-sqlite', label: 'Hono + emailWebhook, SQLite, 50% duplicates', duplicateRatio: 0.5 },
]

async function startServer(variant, env) {
  const child = spawn(process.execPath, [join(here, 'server.js'), variant], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const [line] = await Promise.race([
    once(child.stdout, 'data'),
    once(child, 'exit').then(([code]) => {
      throw new Error(`server ${variant} exited with ${code} before listening: ${stderr}`)
    }),
  ])
  const { port } = JSON.parse(String(line))
  return {
    port,
    async stop() {
      const exited = once(child, 'exit')
      child.kill('SIGTERM')
      await exited
      const last = stderr.trim().split('\n').pop() ?? ''
      try {
        return JSON.parse(last).handled
      } catch {
        return undefined
      }
    },
  }
}

async function runLoad(options) {
  const child = spawn(process.execPath, [join(here, 'load.js'), JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'] })
  let stdout = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
  })
  const [code] = await once(child, 'exit')
  if (code !== 0) throw new Error(`load generator exited with ${code}`)
  return JSON.parse(stdout.trim().split('\n').pop())
}

/** Runs every variant once, in order; each server gets a fresh SQLite file. */
export async function runHttpBench({ durationSeconds, warmupSeconds, variants = HTTP_VARIANTS, onResult }) {
  const rows = []
  for (const variant of variants) {
    const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-http-'))
    try {
      const env = { ...process.env, EMAIL_WEBHOOKS_DB: join(dir, 'dedup.db') }
      const server = await startServer(variant.server, env)
      const load = await runLoad({ port: server.port, durationSeconds, warmupSeconds, duplicateRatio: variant.duplicateRatio ?? 0 })
      const handled = await server.stop()
      const row = { ...variant, ...load, handled }
      rows.push(row)
      onResult?.(row)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
  return rows
}

// Serves the built Worker in workerd through Miniflare as wrangler.toml describes it: a D1 database
// `DB` kept in D1_PERSIST (a folder), the queue `email-webhooks` produced to through `QUEUE` and
// consumed by the same Worker (batches of up to 10, after at most 1 s, 10 retries), and
// EMAIL_WEBHOOK_SECRET as a binding. Prints the URL on 127.0.0.1, then runs until stopped. Miniflare 4
// needs Node ≥ 22: `npm start` fetches it into the repository's tool cache (MINIFLARE_DIR).
//   node scripts/serve.mjs dist/worker.js
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

const from = process.env.MINIFLARE_DIR ? join(process.env.MINIFLARE_DIR, '..', '..', 'index.js') : import.meta.url
const { Miniflare } = await import(pathToFileURL(createRequire(from).resolve('miniflare')).href)

const script = resolve(process.argv[2] ?? 'dist/worker.js')
const mf = new Miniflare({
  modules: true,
  scriptPath: script,
  modulesRoot: dirname(script),
  compatibilityDate: '2026-01-01',
  bindings: { EMAIL_WEBHOOK_SECRET: process.env.EMAIL_WEBHOOK_SECRET ?? '' },
  d1Databases: ['DB'],
  d1Persist: process.env.D1_PERSIST ?? false,
  queueProducers: { QUEUE: { queueName: 'email-webhooks' } },
  queueConsumers: { 'email-webhooks': { maxBatchSize: 10, maxBatchTimeout: 1, maxRetries: 10 } },
  host: '127.0.0.1',
  port: 0,
})
const url = await mf.ready
console.log(`listening on ${url.origin}`)

const stop = async () => {
  await mf.dispose()
  process.exit(0)
}
process.once('SIGTERM', stop)
process.once('SIGINT', stop)

// Serves a built Worker in workerd through Miniflare, on 127.0.0.1 and a free port, with a D1
// database `DB` kept in D1_PERSIST (a folder) and EMAIL_WEBHOOK_SECRET as a binding. Prints the
// URL, then runs until stopped. Miniflare 4 needs Node ≥ 22.
//   node scripts/serve.mjs dist/worker.js
import { dirname, resolve } from 'node:path'
import { Miniflare } from 'miniflare'

const script = resolve(process.argv[2] ?? 'dist/worker.js')
const mf = new Miniflare({
  modules: true,
  scriptPath: script,
  modulesRoot: dirname(script),
  compatibilityDate: '2026-01-01',
  bindings: { EMAIL_WEBHOOK_SECRET: process.env.EMAIL_WEBHOOK_SECRET ?? '' },
  d1Databases: ['DB'],
  d1Persist: process.env.D1_PERSIST ?? false,
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

// Serves a built Worker in workerd through Miniflare, on 127.0.0.1 and a free port, with a D1
// database `DB` kept in D1_PERSIST (a folder), the Durable Object namespace EMAIL_WEBHOOK_DEDUP
// (class EmailWebhookDedupObject, SQLite storage, kept in DO_PERSIST) when the Worker exports that
// class, and EMAIL_WEBHOOK_SECRET as a binding. Prints the
// URL, then runs until stopped. Miniflare 4 needs Node ≥ 22. It is not a dependency of the
// workspace (installing it would download workerd for everyone): `npm start` fetches it into the
// repository's tool cache on first use and passes its folder as MINIFLARE_DIR; elsewhere
// `npm i -D miniflare` and run this with Node ≥ 22.
//   node scripts/serve.mjs dist/worker.js
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

async function loadMiniflare() {
  const from = process.env.MINIFLARE_DIR ? join(process.env.MINIFLARE_DIR, '..', '..', 'index.js') : import.meta.url
  try {
    return await import(pathToFileURL(createRequire(from).resolve('miniflare')).href)
  } catch (cause) {
    throw new Error('miniflare is not installed: run `npm start` in examples/cloudflare-worker, or `npm i -D miniflare` (Node >= 22).', {
      cause,
    })
  }
}
const { Miniflare } = await loadMiniflare()

const script = resolve(process.argv[2] ?? 'dist/worker.js')
// The bundle names the class when the Worker exports it (esbuild keeps export names).
const exportsDedupObject = /\bEmailWebhookDedupObject\b/.test(readFileSync(script, 'utf8'))
const mf = new Miniflare({
  modules: true,
  scriptPath: script,
  modulesRoot: dirname(script),
  compatibilityDate: '2026-01-01',
  bindings: { EMAIL_WEBHOOK_SECRET: process.env.EMAIL_WEBHOOK_SECRET ?? '' },
  d1Databases: ['DB'],
  d1Persist: process.env.D1_PERSIST ?? false,
  ...(exportsDedupObject
    ? {
        durableObjects: { EMAIL_WEBHOOK_DEDUP: { className: 'EmailWebhookDedupObject', useSQLite: true } },
        durableObjectsPersist: process.env.DO_PERSIST ?? false,
      }
    : {}),
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

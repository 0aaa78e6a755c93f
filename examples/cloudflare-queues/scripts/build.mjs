// Bundles src/worker.js into dist/worker.js as wrangler does (examples/cloudflare-worker/scripts/build.mjs).
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildWorker } from '../../cloudflare-worker/scripts/build.mjs'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
await buildWorker(resolve(root, 'src/worker.js'), resolve(root, 'dist/worker.js'))
console.log('wrote dist/worker.js')

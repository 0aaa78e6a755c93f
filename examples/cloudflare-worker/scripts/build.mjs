// Bundles a Worker the way wrangler does: one ES module, resolved with the `workerd`, `worker`
// and `browser` export conditions, so @email-webhooks/core picks its Web Crypto backend and its
// memory default store. `node scripts/build.mjs` writes dist/worker.js.
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

export const WORKER_CONDITIONS = ['workerd', 'worker', 'browser']

/**
 * Bundles `entry` into `outfile`; returns esbuild's metafile (the modules that went in).
 * @param {string} entry
 * @param {string} outfile
 */
export async function buildWorker(entry, outfile) {
  const result = await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    conditions: WORKER_CONDITIONS,
    mainFields: ['module', 'main'],
    metafile: true,
    // Use no tsconfig.json: inside this repository, packages/core/tsconfig.json maps #crypto to
    // the Node sources for tsc, and esbuild would apply that to the built files it bundles.
    tsconfigRaw: {},
    logLevel: 'warning',
  })
  return result.metafile
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
  await buildWorker(resolve(root, 'src/worker.js'), resolve(root, 'dist/worker.js'))
  console.log('wrote dist/worker.js')
}

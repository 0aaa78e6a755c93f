/**
 * The built files a non-Node runtime loads from @email-webhooks/core and @email-webhooks/hono
 * hold no `node:` import, no Node built-in and no `Buffer`; and they never reach
 * better-sqlite3. The module graph is the one esbuild resolves from the packages' exports and
 * imports maps under each runtime's export condition, as Bun, Deno, wrangler and browsers do.
 * The `node` condition is resolved too, as a control: it must reach the Node-only files.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Metafile } from 'esbuild'
import { describe, expect, it } from 'vitest'
import { NODE_BUILTINS as BUILTINS, esbuildGraph, ROOT } from './runtimes.js'

const ENTRIES = ['@email-webhooks/core', '@email-webhooks/hono']

/** The files and imports that the entries reach under `conditions`; packages outside the workspace (hono) stay external. */
function graph(conditions: string[]): Promise<Metafile> {
  return esbuildGraph(ENTRIES.map((e) => `export * from '${e}'`).join('\n'), conditions, ['hono', 'hono/*'])
}

const ourFiles = (meta: Metafile) => Object.keys(meta.inputs).filter((f) => f.includes('packages/'))
const short = (f: string) => f.slice(f.indexOf('packages/'))

for (const condition of ['bun', 'deno', 'workerd', 'browser']) {
  describe(`under the "${condition}" condition`, () => {
    it('resolves core and hono to their built web files only', async () => {
      const meta = await graph([condition])
      // console.js: the operator's console that the Hono adapter re-exports (web-standard; a bundler drops it when unused).
      expect(ourFiles(meta).map(short).sort()).toEqual([
        'packages/core/dist/console.js',
        'packages/core/dist/crypto-web.js',
        'packages/core/dist/default-store-web.js',
        'packages/core/dist/index.js',
        'packages/core/dist/telemetry-api-web.js',
        'packages/hono/dist/index.js',
      ])
    })

    it('finds no node: import, no Node built-in, no better-sqlite3 and no Buffer in those files', async () => {
      const meta = await graph([condition])
      const imports = Object.values(meta.inputs).flatMap((input) => input.imports.map((i) => i.path))
      expect(imports.filter((path) => BUILTINS.has(path) || path.includes('better-sqlite3') || path.endsWith('sqlite.js'))).toEqual([])
      for (const file of ourFiles(meta)) {
        const text = readFileSync(join(ROOT, file.slice(file.indexOf('packages/'))), 'utf8')
        expect([short(file), text.match(/\bnode:[a-z_/]+/g)]).toEqual([short(file), null])
        expect([short(file), text.match(/\bBuffer\b/g)]).toEqual([short(file), null])
        expect([short(file), text.match(/better-sqlite3/g)]).toEqual([short(file), null])
      }
    })
  })
}

describe('under the "node" condition (control)', () => {
  it('reaches the node:crypto backend, the SQLite default store and the Node telemetry loader, which the checks above would refuse', async () => {
    const meta = await graph(['node'])
    const files = ourFiles(meta).map(short)
    expect(files).toEqual(
      expect.arrayContaining([
        'packages/core/dist/crypto-node.js',
        'packages/core/dist/default-store-node.js',
        'packages/core/dist/telemetry-api-node.js',
      ]),
    )
    const imports = Object.values(meta.inputs).flatMap((input) => input.imports.map((i) => i.path))
    expect(imports).toEqual(expect.arrayContaining(['node:crypto', 'node:module']))
  })
})

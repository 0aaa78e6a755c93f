/**
 * The API client entry runs on every runtime: under the Workers, Deno, Bun and browser export
 * conditions, `@email-webhooks/core/api` reaches no Node built-in and no `Buffer`; the testing
 * entry (faithful sender included) has no static Node import, only `listenSender`'s dynamic one.
 */
import { readFileSync } from 'node:fs'
import { builtinModules, createRequire } from 'node:module'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT, RUNTIMES_DIR } from '../runtimes/runtimes.js'

/** The part of esbuild's metafile read here. */
interface Metafile {
  inputs: Record<string, { imports: Array<{ path: string; kind: string }> }>
}
// esbuild is a dependency of the runtimes suite: load it from there.
const { build } = createRequire(join(RUNTIMES_DIR, 'runtimes.ts'))('esbuild') as {
  build(options: Record<string, unknown>): Promise<{ metafile: Metafile }>
}

const BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]))

async function graph(entry: string, conditions: string[]): Promise<Metafile> {
  const result = await build({
    stdin: { contents: `export * from '${entry}'`, resolveDir: RUNTIMES_DIR, loader: 'js' },
    bundle: true,
    write: false,
    metafile: true,
    format: 'esm',
    platform: 'neutral',
    conditions,
    mainFields: ['module', 'main'],
    tsconfigRaw: {},
    external: [...BUILTINS],
    logLevel: 'silent',
  })
  return result.metafile
}

for (const condition of ['workerd', 'deno', 'bun', 'browser']) {
  describe(`under the "${condition}" condition`, () => {
    it('@email-webhooks/core/api reaches only web files, with no Node built-in and no Buffer', async () => {
      const meta = await graph('@email-webhooks/core/api', [condition])
      const imports = Object.values(meta.inputs).flatMap((input) => input.imports.map((i) => i.path))
      expect(imports.filter((path) => BUILTINS.has(path))).toEqual([])
      const files = Object.keys(meta.inputs).filter((f) => f.includes('packages/'))
      expect(files.map((f) => f.slice(f.indexOf('packages/')))).toEqual(['packages/core/dist/api.js'])
      const text = readFileSync(join(ROOT, 'packages/core/dist/api.js'), 'utf8')
      expect([text.match(/\bnode:[a-z_/]+/g), text.match(/\bBuffer\b/g)]).toEqual([null, null])
    })

    it('@email-webhooks/core/testing has no static Node import', async () => {
      const meta = await graph('@email-webhooks/core/testing', [condition])
      const staticNode = Object.values(meta.inputs).flatMap((input) =>
        input.imports.filter((i) => BUILTINS.has(i.path) && i.kind !== 'dynamic-import').map((i) => i.path),
      )
      expect(staticNode).toEqual([])
    })
  })
}

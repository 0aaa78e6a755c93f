/**
 * The API client entry runs on every runtime: under the Workers, Deno, Bun and browser export
 * conditions, `@email-webhooks/core/api` reaches no Node built-in and no `Buffer` (its only import
 * is core's Web Crypto backend, which signs reconciled events); the testing entry (faithful
 * sender included) has no static Node import, only `listenSender`'s dynamic one.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { NODE_BUILTINS as BUILTINS, esbuildGraph, ROOT } from '../runtimes/runtimes.js'

const graph = (entry: string, conditions: string[]) => esbuildGraph(`export * from '${entry}'`, conditions)

for (const condition of ['workerd', 'deno', 'bun', 'browser']) {
  describe(`under the "${condition}" condition`, () => {
    it('@email-webhooks/core/api reaches only web files, with no Node built-in and no Buffer', async () => {
      const meta = await graph('@email-webhooks/core/api', [condition])
      const imports = Object.values(meta.inputs).flatMap((input) => input.imports.map((i) => i.path))
      expect(imports.filter((path) => BUILTINS.has(path))).toEqual([])
      const files = Object.keys(meta.inputs).filter((f) => f.includes('packages/'))
      const reached = files.map((f) => f.slice(f.indexOf('packages/'))).sort()
      expect(reached).toEqual(['packages/core/dist/api.js', 'packages/core/dist/crypto-web.js'])
      for (const file of reached) {
        const text = readFileSync(join(ROOT, file), 'utf8')
        expect([text.match(/\bnode:[a-z_/]+/g), text.match(/\bBuffer\b/g)]).toEqual([null, null])
      }
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

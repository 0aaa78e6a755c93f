/**
 * The root README's Bun.serve, Deno.serve and Workers recipes are the example files that the
 * examples' tests run under Bun, Deno and workerd, quoted whole.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from './runtimes.js'

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')

describe('root README runtime recipes', () => {
  const recipes: [string, string][] = [
    ['ts', 'examples/bun/src/server.ts'],
    ['ts', 'examples/deno/src/server.ts'],
    ['js', 'examples/cloudflare-worker/src/worker.js'],
  ]
  for (const [lang, file] of recipes) {
    it(`quotes ${file} whole, as one code block`, () => {
      const source = readFileSync(join(ROOT, file), 'utf8').trimEnd()
      expect(readme).toContain(`\`\`\`${lang}\n${source}\n\`\`\``)
      expect(readme).toContain(`(${file})`)
    })
  }
})

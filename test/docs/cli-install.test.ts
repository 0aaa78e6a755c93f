/**
 * Installing the CLI, as the command line guide (docs/guides/cli.md) and the CLI's README tell it: the `npm i -D` line of `npm run pack` (an absolute
 * path, which works outside the clone, not `./packs/…`), and what npx's bare 404 for
 * `npx --no-install email-webhooks …` means, with the line to run. `npm run pack`'s own output is
 * checked by test/pack/pack.test.ts.
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const prose = (doc: string): string => readFileSync(join(ROOT, doc), 'utf8').replace(/\s+/g, ' ')
const NOT_FOUND = 'npm error 404 Not Found - GET https://registry.npmjs.org/email-webhooks'

describe.each(['docs/guides/cli.md', 'packages/cli/README.md'])('%s on installing the CLI', (doc) => {
  it("says what npx's bare 404 means and gives the install line, in its absolute form", () => {
    const text = prose(doc)
    expect(text).toContain(NOT_FOUND)
    expect(text).toMatch(/the CLI is not installed in (this|that) folder/)
    expect(text).toMatch(/npm i -D \/[^ ]*packs\/email-webhooks-(0\.1\.0|\[0-9\]\*)\.tgz/)
    expect(text).not.toMatch(/npm i -D \.\/packs\//)
  })
})

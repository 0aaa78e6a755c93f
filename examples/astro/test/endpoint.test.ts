/**
 * examples/astro: the endpoint, imported and called as Astro calls it (`POST({ request, … })` with a
 * real `Request`; Astro is not started). Proves the endpoint answers every recipe delivery and reads
 * the exact bytes, and that it opts out of prerendering; routing and the SSR adapter are Astro's and
 * not exercised here.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { expectWebRecipe } from '../../../test/recipes/web-recipe.js'

const scratch = mkdtempSync(join(tmpdir(), 'example-astro-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe('examples/astro: src/pages/api/hooks.ts', () => {
  it('answers the recipe deliveries through the exported POST and marks each new bounce once', async () => {
    Object.assign(process.env, { EMAIL_WEBHOOK_SECRET: TEST_SECRET, EMAIL_WEBHOOKS_DB: join(scratch, 'dedup.db') })
    const endpoint = await import('../src/pages/api/hooks.js')
    const { bounced } = await import('../src/lib/db.js')
    expect(endpoint.prerender).toBe(false)
    await expectWebRecipe(
      (request) => endpoint.POST({ request }),
      () => bounced,
      '/api/hooks',
    )
  })
})

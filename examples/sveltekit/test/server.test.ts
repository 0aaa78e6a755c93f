/**
 * examples/sveltekit: the `+server.ts` endpoint, imported and called as SvelteKit calls it
 * (`POST({ request, … })` with a real `Request`; the dev server is not started). Proves the
 * endpoint answers every recipe delivery and reads the exact bytes; routing, `$env` and the
 * adapter that serves the app are SvelteKit's and not exercised here.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, describe, it } from 'vitest'
import { expectWebRecipe } from '../../../test/recipes/web-recipe.js'

const scratch = mkdtempSync(join(tmpdir(), 'example-sveltekit-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe('examples/sveltekit: src/routes/hooks/+server.ts', () => {
  it('answers the recipe deliveries through the exported POST and marks each new bounce once', async () => {
    Object.assign(process.env, { EMAIL_WEBHOOK_SECRET: TEST_SECRET, EMAIL_WEBHOOKS_DB: join(scratch, 'dedup.db') })
    const { POST } = await import('../src/routes/hooks/+server.js')
    const { bounced } = await import('../src/lib/server/db.js')
    await expectWebRecipe(
      (request) => POST({ request }),
      () => bounced,
    )
  })
})

/**
 * examples/nextjs: the App Router route handler, imported as Next imports it and called with real
 * `Request`s (Next is not started: it would pass the same unread Request). Proves the exported POST
 * answers every recipe delivery and reads the exact bytes; the route's place in a Next app (its
 * path, the Node.js runtime) is Next's and not exercised here.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, describe, it } from 'vitest'
import { expectWebRecipe } from '../../../test/recipes/web-recipe.js'

const scratch = mkdtempSync(join(tmpdir(), 'example-nextjs-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe('examples/nextjs: app/api/hooks/route.ts', () => {
  it('answers the recipe deliveries through the exported POST and marks each new bounce once', async () => {
    Object.assign(process.env, { EMAIL_WEBHOOK_SECRET: TEST_SECRET, EMAIL_WEBHOOKS_DB: join(scratch, 'dedup.db') })
    const { POST } = await import('../app/api/hooks/route.js')
    const { bounced } = await import('../lib/db.js')
    await expectWebRecipe(POST, () => bounced, '/api/hooks')
  })
})

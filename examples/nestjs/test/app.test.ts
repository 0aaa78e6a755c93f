/**
 * examples/nestjs: the same module on the Express platform and on the Fastify platform, created
 * with { rawBody: true } and listening on 127.0.0.1. Proves the controller answers every recipe
 * delivery over HTTP, verifies the exact bytes (BOM, invalid UTF-8) from req.rawBody, runs the
 * injected service once per new bounce, and that the app's JSON route still parses. A body past the
 * limit is refused by the platform's body parser before the controller (Nest's 413, not ours).
 */

import { mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TEST_SECRET } from '@email-webhooks/core/testing'
import type { INestApplication } from '@nestjs/common'
import { afterAll, describe, expect, it } from 'vitest'
import { expectWebRecipe, overHttp } from '../../../test/recipes/web-recipe.js'
import { createApp } from '../src/create-app.js'
import { EmailsService } from '../src/emails.service.js'

const scratch = mkdtempSync(join(tmpdir(), 'example-nestjs-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe.each(['express', 'fastify'] as const)('examples/nestjs on the %s platform', (platform) => {
  it('answers the recipe deliveries over HTTP and marks each new bounce once through the injected service', async () => {
    Object.assign(process.env, { EMAIL_WEBHOOK_SECRET: TEST_SECRET, EMAIL_WEBHOOKS_DB: join(scratch, `${platform}.db`) })
    const app: INestApplication = await createApp(platform)
    await app.listen(0, '127.0.0.1')
    try {
      const base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`
      const emails = app.get(EmailsService)
      await expectWebRecipe(overHttp(base), () => emails.bounced, '/hooks', { tooLarge: 'framework' })
      const note = await fetch(`${base}/api/notes`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"text":"hi"}',
      })
      expect(await note.json()).toEqual({ saved: { text: 'hi' } })
    } finally {
      await app.close()
    }
  })
})

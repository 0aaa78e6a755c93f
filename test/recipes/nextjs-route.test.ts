// The Next.js route handler recipe from the root README, run as written.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { describe, expect, it } from 'vitest'

describe('README recipe: Next.js route handler through the fetch handler', () => {
  it('answers 200 to a signed bounce and calls markBounced with the email id', async () => {
    process.env.EMAIL_WEBHOOK_SECRET = TEST_SECRET
    const dir = mkdtempSync(join(tmpdir(), 'nextjs-recipe-'))
    process.env.EMAIL_WEBHOOKS_DB = join(dir, 'dedup.db')
    const bounced: string[] = []
    const markBounced = async (id: string) => void bounced.push(id)
    try {
      // --- app/api/hooks/route.ts (as in the README) ---
      const { emailWebhook } = await import('@email-webhooks/core')
      const POST = emailWebhook(process.env.EMAIL_WEBHOOK_SECRET!, {
        'email.bounced': async (event) => {
          await markBounced(event.data.id)
        },
      })
      // ---
      const delivery = await createSignedDelivery({ type: 'email.bounced' })
      const res = await POST(new Request('http://localhost/api/hooks', { method: 'POST', headers: delivery.headers, body: delivery.body }))
      expect(res.status).toBe(200)
      expect(bounced).toEqual([delivery.event.data.id])
    } finally {
      delete process.env.EMAIL_WEBHOOK_SECRET
      delete process.env.EMAIL_WEBHOOKS_DB
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

/**
 * When something outside the handler guard (here: req.res, the real response) has already
 * answered by the time the receiver's answer is ready, the middleware does not drop its answer
 * silently: it hands an error to Express's error handling, which reports it.
 */
import { MemoryDedupStore } from '@email-webhooks/core'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { emailWebhook } from '@email-webhooks/express'
import express, { type NextFunction, type Request, type Response } from 'express'
import { describe, expect, it } from 'vitest'

describe('Express middleware when the response was sent around it', () => {
  it('reports the lost answer through next(error) and leaves the early answer as it was', async () => {
    const reported: string[] = []
    const app = express()
    app.post(
      '/hooks',
      emailWebhook(
        TEST_SECRET,
        {
          'email.bounced': (_event, ctx) => {
            // Not ctx.res (guarded): the raw response, as a careless helper might reach it.
            ;(ctx.req as Request & { res: Response }).res.status(202).send('early')
            throw new Error('then the handler failed')
          },
        },
        { store: new MemoryDedupStore(), logger: false },
      ),
    )
    app.use((error: Error, _req: Request, _res: Response, next: NextFunction) => {
      reported.push(error.message)
      next()
    })
    const server = app.listen(0, '127.0.0.1')
    await new Promise<void>((resolve) => server.once('listening', () => resolve()))
    try {
      const { port } = server.address() as import('node:net').AddressInfo
      const delivery = await createSignedDelivery({ type: 'email.bounced' })
      const res = await fetch(`http://127.0.0.1:${port}/hooks`, { method: 'POST', headers: delivery.headers, body: delivery.body })
      expect([res.status, await res.text()]).toEqual([202, 'early'])
      await expect
        .poll(() => reported)
        .toEqual([expect.stringMatching(/already sent when the receiver's 500 \(handler_failed\) answer was ready/)])
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

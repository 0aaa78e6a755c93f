/**
 * examples/sqs: both Lambda functions of the module, as Lambda loads them, against a real Redis and
 * fauxqs (an SQS emulator from npm, on 127.0.0.1) with a FIFO queue. The test stands in for Lambda's
 * SQS poller: it receives messages, hands them to `consumer` as an SQS event, and deletes those not
 * reported as failed. A redelivery within the 5 minutes makes no second message; a handler that throws
 * gets its message back after the visibility timeout and runs again; a second copy of a handled event
 * (as SQS may deliver, or a redelivery after the 5 minutes) runs no handler.
 */
import { CreateQueueCommand, DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import type { SQSEvent } from 'aws-lambda'
import { type FauxqsServer, interceptLocalhostDns, startFauxqs } from 'fauxqs'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { lambdaContext, lambdaEvent } from '../../../test/adapters/lambda-events.js'
import { sharedRedis, type TestServer } from '../../../test/services/servers.js'

type Functions = typeof import('../src/functions.ts')

let redis: TestServer
let fauxqs: FauxqsServer
let sqs: SQSClient
let queueUrl: string
let functions: Functions
let restoreDns: (() => void) | undefined

beforeAll(async () => {
  redis = await sharedRedis()
  fauxqs = await startFauxqs({ port: 0, logger: false })
  // Its queue URLs are http://sqs.us-east-1.localhost:<port>/…, and the SDK sends to the queue URL's
  // host: make *.localhost resolve to 127.0.0.1 in this process.
  restoreDns = interceptLocalhostDns()
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_SQS: `http://127.0.0.1:${fauxqs.port}`,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
  })
  sqs = new SQSClient({})
  const created = await sqs.send(
    new CreateQueueCommand({ QueueName: 'email-webhooks.fifo', Attributes: { FifoQueue: 'true', VisibilityTimeout: '1' } }),
  )
  queueUrl = created.QueueUrl ?? ''
  Object.assign(process.env, { EMAIL_WEBHOOK_SECRET: TEST_SECRET, QUEUE_URL: queueUrl, REDIS_URL: redis.url })
  functions = await import('../src/functions.ts')
})
afterAll(async () => {
  await functions?.webhook.store().close?.()
  sqs?.destroy()
  await fauxqs?.stop()
  await redis?.stop()
  restoreDns?.()
})

/** Lambda's poller, once: what it received, and what `consumer` reported failed (left on the queue). */
async function poll(): Promise<{ received: number; failed: number }> {
  const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }))
  if (Messages.length === 0) return { received: 0, failed: 0 }
  const event = {
    Records: Messages.map((m) => ({ messageId: m.MessageId, receiptHandle: m.ReceiptHandle, body: m.Body, eventSource: 'aws:sqs' })),
  } as SQSEvent
  const { batchItemFailures } = await functions.consumer(event)
  const failed = new Set(batchItemFailures.map((f) => f.itemIdentifier))
  for (const m of Messages) {
    if (!failed.has(m.MessageId ?? '')) await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }))
  }
  return { received: Messages.length, failed: failed.size }
}

describe('examples/sqs', () => {
  it('queues a delivery once within the deduplication window, and the consumer retries a failed handler', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {})
    log.mockImplementationOnce(() => {
      throw new Error('the mail database is down')
    })
    try {
      const delivery = await createSignedDelivery({ type: 'email.bounced' })
      const first = await functions.webhook(lambdaEvent('function-url', delivery.headers, delivery.body), lambdaContext())
      const again = await createSignedDelivery({ event: delivery.event })
      const second = await functions.webhook(lambdaEvent('http-api', again.headers, again.body), lambdaContext())
      expect([first.statusCode, first.body, second.statusCode, second.body]).toEqual([
        200,
        '{"ok":true,"queued":true}',
        200,
        '{"ok":true,"queued":true}',
      ])
      // SQS kept one message; its first run throws (reported failed), and it comes back after 1 s.
      expect(await poll()).toEqual({ received: 1, failed: 1 })
      let retried = { received: 0, failed: 0 }
      for (let i = 0; i < 10 && retried.received === 0; i++) retried = await poll()
      expect(retried).toEqual({ received: 1, failed: 0 })
      expect(await poll()).toEqual({ received: 0, failed: 0 })
      expect(log.mock.calls.map(([line]) => line)).toEqual([
        `email ${delivery.event.data.id} bounced`,
        `email ${delivery.event.data.id} bounced`,
      ])

      // A second copy of the handled event (SQS may deliver one twice): the store knows it, no handler runs.
      const body = JSON.stringify({ key: `default:${delivery.event.id}`, type: 'email.bounced', payload: delivery.body, timestamp: 1 })
      await sqs.send(
        new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body, MessageGroupId: 'copy', MessageDeduplicationId: 'copy' }),
      )
      expect(await poll()).toEqual({ received: 1, failed: 0 })
      expect(log).toHaveBeenCalledTimes(2)
    } finally {
      log.mockRestore()
    }
  })
})

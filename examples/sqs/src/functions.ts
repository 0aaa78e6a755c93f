// Inbox mode with Amazon SQS on AWS Lambda: two functions from one module. `webhook` (behind API
// Gateway or a function URL) verifies each delivery and sends it to a FIFO queue with a
// MessageDeduplicationId derived from the event id, so SQS drops a redelivery sent within its
// 5-minute deduplication window; it answers 200 once SQS has the message. `consumer` (the queue's
// Lambda trigger, with ReportBatchItemFailures on) runs the handlers and reports the messages that
// failed, which SQS delivers again after their visibility timeout. Both use one dedup store: a message
// delivered twice, or a redelivery after the 5 minutes, runs its handler once.
import { createHash } from 'node:crypto'
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs'
import { createInboxProcessor, type InboxItem, type InboxSink } from '@email-webhooks/core'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { emailWebhook } from '@email-webhooks/lambda'
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda'

const { EMAIL_WEBHOOK_SECRET: secret, QUEUE_URL: queueUrl, REDIS_URL: redisUrl } = process.env
if (!secret || !queueUrl || !redisUrl) throw new Error('Set EMAIL_WEBHOOK_SECRET, QUEUE_URL (a FIFO queue) and REDIS_URL.')

const store = new RedisDedupStore({ url: redisUrl })
const sqs = new SQSClient({})

/** SQS ids are at most 128 characters of a limited set: the SHA-256 of the text, in hex. */
const sqsId = (text: string) => createHash('sha256').update(text).digest('hex')

const sink: InboxSink = {
  async enqueue(item) {
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: JSON.stringify(item),
        MessageDeduplicationId: sqsId(item.key),
        // With `ordering: true`, one group per email (its events one at a time, in order); else one per event.
        MessageGroupId: sqsId(item.orderKey ?? item.key),
      }),
    )
    return 'queued' // SQS answers a deduplicated send as it answers a new one
  },
}

export const webhook = emailWebhook(secret, {}, { mode: 'inbox', inbox: { sink }, store })

const processor = createInboxProcessor({
  handlers: { 'email.bounced': async (event) => console.log(`email ${event.data.id} bounced`) },
  store,
})

export async function consumer(event: SQSEvent): Promise<SQSBatchResponse> {
  const batchItemFailures: SQSBatchResponse['batchItemFailures'] = []
  for (const record of event.Records) {
    // A FIFO queue: after a failure, hand back the rest of the batch too, so that nothing overtakes it.
    if (batchItemFailures.length > 0) {
      batchItemFailures.push({ itemIdentifier: record.messageId })
      continue
    }
    try {
      await processor.process(JSON.parse(record.body) as InboxItem)
    } catch {
      batchItemFailures.push({ itemIdentifier: record.messageId }) // the processor logged why
    }
  }
  return { batchItemFailures }
}

/**
 * @email-webhooks/bullmq: hand verified events to a BullMQ queue from an inbox-mode receiver
 * (`inbox: { sink: bullmqSink(queue) }`), and run the jobs with `bullmqProcessor(processor)` in a
 * BullMQ `Worker`. The event id is the job id: a redelivery never makes a second job.
 */
export { type BullmqInboxJob, type BullmqInboxProcessorFn, bullmqProcessor } from './processor.js'
export {
  BULLMQ_JOB_DEFAULTS,
  type BullmqInboxJobData,
  type BullmqQueueLike,
  type BullmqSinkJobOptions,
  type BullmqSinkOptions,
  bullmqJobId,
  bullmqSink,
} from './sink.js'

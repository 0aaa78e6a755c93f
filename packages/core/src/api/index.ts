/**
 * @email-webhooks/core/api: the typed client of the sender's webhook management API and email
 * read, and `recoverEndpoint()`, which brings a disabled endpoint's events back exactly once.
 */
export {
  type CallOptions,
  createWebhooksClient,
  DEFAULT_API_BACKOFF_BASE_MS,
  DEFAULT_API_BACKOFF_MAX_MS,
  DEFAULT_API_MAX_RETRIES,
  DEFAULT_API_MAX_RETRY_AFTER_MS,
  DEFAULT_API_TIMEOUT_MS,
  validateBaseUrl,
  WEBHOOKS_SCOPE,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhooksClient,
  type WebhooksClientOptions,
} from './client.js'
export {
  EMAILS_SCOPE,
  type EmailRecipient,
  type EmailRecipientRetry,
  type EmailStatus,
  type EmailStatusEvent,
  type GetEmailResult,
  isUuid,
} from './emails.js'
export {
  EmailApiError,
  type EmailApiErrorCode,
  type EmailApiErrorInit,
  type EmailApiFieldError,
  RecoveryAbortedError,
} from './errors.js'
export { parseRetryAfter, RETRYABLE_STATUSES, type RetryInfo } from './http.js'
export {
  type AlreadyHandledReason,
  DEFAULT_RECOVER_CONCURRENCY,
  DEFAULT_RECOVER_SPACING_MS,
  DELIVERIES_LIST_CAP,
  type RecoverEndpointOptions,
  type RecoveryItem,
  type RecoveryReport,
  recoverEndpoint,
} from './recover.js'
export { checkEndpointUrl, type EndpointUrlProblem, isLoopbackHost } from './urls.js'

/**
 * @email-webhooks/core/api: the typed client of the sender's webhook management API and email
 * read, `recoverEndpoint()`, which brings a disabled endpoint's listed deliveries back, and
 * `reconcileEmails()`, which brings every event a receiver missed back from the emails' own
 * event lists, each exactly once.
 */

export { ReconcileAbortedError, RecoveryAbortedError } from './aborted.js'
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
export { EmailApiError, type EmailApiErrorCode, type EmailApiErrorInit, type EmailApiFieldError } from './errors.js'
export { parseRetryAfter, RETRYABLE_STATUSES, type RetryInfo } from './http.js'
export {
  DEFAULT_RECONCILE_CONCURRENCY,
  DEFAULT_RECONCILE_MAX_ATTEMPTS,
  DEFAULT_RECONCILE_RETENTION_MS,
  DEFAULT_RECONCILE_TIMEOUT_MS,
  type EmailReconcileResult,
  type EmailReconcileStatus,
  type EntryProblem,
  type InvalidEntry,
  type ReconciledEvent,
  type ReconcileEmailsOptions,
  type ReconcileEventOutcome,
  type ReconcileReport,
  type ReconcileStop,
  type ReconcileTotals,
  reconcileEmails,
  reconcileTotals,
} from './reconcile.js'
export { RECONCILE_ID_NAMESPACE, reconcileEventId } from './reconcile-id.js'
export { RECONCILE_CLOCK_MARGIN_MS } from './reconcile-plan.js'
export {
  type AlreadyHandledReason,
  DEFAULT_RECOVER_CONCURRENCY,
  DEFAULT_RECOVER_SPACING_MS,
  DELIVERIES_LIST_CAP,
  type RecoverEndpointOptions,
  type RecoveryItem,
  type RecoveryReport,
  recoverEndpoint,
  type SenderNextAttempt,
} from './recover.js'
export { checkEndpointUrl, type EndpointUrlProblem, isLoopbackHost } from './urls.js'

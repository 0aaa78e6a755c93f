/**
 * The public surface of `@email-webhooks/core/api`, ESM and CommonJS alike: a name added or
 * removed is a decision, made here on purpose.
 */
import { createRequire } from 'node:module'
import * as api from '@email-webhooks/core/api'
import { expect, it } from 'vitest'

const EXPORTS = [
  'DEFAULT_API_BACKOFF_BASE_MS',
  'DEFAULT_API_BACKOFF_MAX_MS',
  'DEFAULT_API_MAX_RETRIES',
  'DEFAULT_API_MAX_RETRY_AFTER_MS',
  'DEFAULT_API_TIMEOUT_MS',
  'DEFAULT_RECONCILE_CONCURRENCY',
  'DEFAULT_RECONCILE_MAX_ATTEMPTS',
  'DEFAULT_RECONCILE_RETENTION_MS',
  'DEFAULT_RECONCILE_TIMEOUT_MS',
  'DEFAULT_RECOVER_CONCURRENCY',
  'DEFAULT_RECOVER_SPACING_MS',
  'DELIVERIES_LIST_CAP',
  'EMAILS_SCOPE',
  'EmailApiError',
  'RECONCILE_CLOCK_MARGIN_MS',
  'RECONCILE_ID_NAMESPACE',
  'RETRYABLE_STATUSES',
  'ReconcileAbortedError',
  'RecoveryAbortedError',
  'WEBHOOKS_SCOPE',
  'checkEndpointUrl',
  'createWebhooksClient',
  'isLoopbackHost',
  'isUuid',
  'parseRetryAfter',
  'reconcileEmails',
  'reconcileEventId',
  'reconcileTotals',
  'recoverEndpoint',
  'validateBaseUrl',
]

it('exports exactly these names, from import and from require', () => {
  expect(Object.keys(api).sort()).toEqual(EXPORTS)
  const required = createRequire(import.meta.url)('@email-webhooks/core/api') as Record<string, unknown>
  expect(Object.keys(required).sort()).toEqual(EXPORTS)
})

/**
 * Receiver defaults that the web-only `@email-webhooks/core/api` entry needs too (recovery
 * lookups, reconcile's retention), in a module of their own: the api must not bundle the receiver
 * (whose options import the default store).
 */

/** Dedup keys' prefix when the receiver is given no `namespace`. */
export const DEFAULT_NAMESPACE = 'default'

/** How long handled events are remembered by default: 7 days, longer than the sender's retry span. */
export const DEFAULT_RETENTION_MS: number = 7 * 24 * 60 * 60 * 1000

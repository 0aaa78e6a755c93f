/**
 * The receiver's default dedup namespace (keys are `namespace + ":" + webhook-id`), in a module
 * of its own: the web-only `@email-webhooks/core/api` entry needs it for recovery lookups and
 * must not bundle the receiver (whose options import the default store).
 */

/** Dedup keys' prefix when the receiver is given no `namespace`. */
export const DEFAULT_NAMESPACE = 'default'

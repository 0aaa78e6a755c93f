/**
 * The event id reconcile gives an entry of an email's `events` list (which has none): a UUID v5
 * (RFC 9562: SHA-1 over a fixed namespace and a name) of the email id, the type, the `created_at`
 * millisecond and the entry's index among that email's entries of that type and millisecond. The
 * same entry always gets the same id, so a second reconcile sends the same `webhook-id` and the
 * receiver's dedup answers it as a duplicate. On Web Crypto: the API entry stays runtime-neutral.
 */

/** The UUID v5 namespace of reconciled event ids (fixed forever: changing it changes every id). */
export const RECONCILE_ID_NAMESPACE = '4f01d591-7d88-46f0-8326-54a5ddc5f277'

const encoder = new TextEncoder()

function uuidBytes(uuid: string): Uint8Array {
  const hex = uuid.replaceAll('-', '')
  return Uint8Array.from({ length: 16 }, (_, i) => Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16))
}

function format(bytes: Uint8Array): string {
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`
}

const NAMESPACE_BYTES = uuidBytes(RECONCILE_ID_NAMESPACE)

/**
 * The deterministic event id of one entry of an email's event list: UUID v5 in
 * {@link RECONCILE_ID_NAMESPACE} of the name `JSON.stringify([emailId, type, createdAtMs, index])`
 * (reproducible with any UUID v5 library).
 *
 * @param emailId The email id as the service spells it (`GET /emails/{id}`'s `id`).
 * @param type The entry's type.
 * @param createdAtMs Its `created_at` in whole milliseconds since the epoch.
 * @param index Its position (0-based) among the email's entries of that type and millisecond.
 * @returns A lowercase UUID (version 5).
 * @throws Never, on a runtime with Web Crypto.
 * @example
 * await reconcileEventId('0c1f6d2e-6b53-4f4e-9a77-1b8f1d8c2a10', 'email.bounced', 1767225600000, 0)
 * // '0c144790-9146-5b40-ab0e-a91d96a96847'
 */
export async function reconcileEventId(emailId: string, type: string, createdAtMs: number, index: number): Promise<string> {
  const name = encoder.encode(JSON.stringify([emailId, type, createdAtMs, index]))
  const input = new Uint8Array(NAMESPACE_BYTES.byteLength + name.byteLength)
  input.set(NAMESPACE_BYTES, 0)
  input.set(name, NAMESPACE_BYTES.byteLength)
  const hash = new Uint8Array(await crypto.subtle.digest('SHA-1', input))
  const bytes = hash.slice(0, 16)
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x50
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80
  return format(bytes)
}

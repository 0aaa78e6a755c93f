/**
 * Reading the fact keys the ordering stores write (`<order key>|<type>|<created_at ms>`, see
 * receiver/order.ts) back into a type and a time, for the console. Pure; bundled into each store's
 * console reads.
 */
import type { FactRecord } from './source.js'

/**
 * The fact of `orderKey` stored under `key`, or nothing when the rest of the key is not
 * `<type>|<ms>` (another email whose id goes on with `|`, read by the same key range).
 * @example
 * factOf({ key: 'default:email:e1|email.queued|1700000000000', handled: 1, reconciled: 0, expiresAt: null }, 'default:email:e1')
 */
export function factOf(
  row: { key: string; handled: number; reconciled: number; expiresAt: number | null },
  orderKey: string,
): FactRecord[] {
  if (!row.key.startsWith(`${orderKey}|`)) return []
  const match = /^([^|]+)\|(\d{1,15})$/.exec(row.key.slice(orderKey.length + 1))
  if (!match) return []
  return [
    {
      type: match[1] as string,
      createdAtMs: Number(match[2]),
      handled: Number(row.handled),
      reconciled: Number(row.reconciled),
      expiresAt: row.expiresAt,
    },
  ]
}

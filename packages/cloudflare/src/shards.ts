/** Which Durable Object holds a key: a fixed number of objects, picked by a hash of the key. */

/** Objects used when `shards` is not given. */
export const DEFAULT_SHARDS: number = 16
/** Most objects a store may spread its keys over. */
export const MAX_SHARDS: number = 1024

/** FNV-1a over the UTF-16 units of `key`, as an unsigned 32-bit number. */
export function hashKey(key: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193)
  return hash >>> 0
}

/** The shard (0 to `shards` − 1) of `key`. */
export function shardOf(key: string, shards: number): number {
  return hashKey(key) % shards
}

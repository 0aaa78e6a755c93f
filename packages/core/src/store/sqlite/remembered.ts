/**
 * Keys this process completed (and synced) with when their record expires, so their duplicates
 * answer without touching the file: the newest `REMEMBERED_KEYS`, the oldest forgotten first.
 */

/** Keys completed by this process kept in memory to answer their duplicates without SQL. */
const REMEMBERED_KEYS = 10_000

/** The keys this store completed lately. */
export class RememberedKeys {
  readonly #expiries = new Map<string, number>()
  /** The keys in the order they came, to forget the oldest. */
  readonly #ring: (string | undefined)[] = new Array(REMEMBERED_KEYS)
  #next = 0

  /** True while `key` is remembered as done at `now`; a lapsed key is forgotten. */
  isDone(key: string, now: number): boolean {
    const expiresAt = this.#expiries.get(key)
    if (expiresAt === undefined) return false
    if (expiresAt > now) return true
    this.#expiries.delete(key)
    return false
  }

  has(key: string): boolean {
    return this.#expiries.has(key)
  }

  remember(key: string, expiresAt: number): void {
    // Forgets in insertion order through a ring of keys: taking the first key of a Map that keeps
    // losing its first entries walks over every deleted slot (V8), which cost ~10 µs per event.
    const oldest = this.#ring[this.#next]
    if (oldest !== undefined) this.#expiries.delete(oldest)
    this.#ring[this.#next] = key
    this.#next = (this.#next + 1) % REMEMBERED_KEYS
    this.#expiries.set(key, expiresAt)
  }

  clear(): void {
    this.#expiries.clear()
    this.#ring.fill(undefined)
  }
}

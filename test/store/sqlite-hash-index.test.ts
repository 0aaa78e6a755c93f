/**
 * The SQLite store's in-memory index of sealed keys' hashes (generations.ts `HashIndex`), against a
 * plain model: every hash of a live generation is found under that generation whatever the shards
 * did meanwhile (grown, made anew without retired keys), a retired generation's are never found, a
 * number is given out again only once no key of its old generation can be found under it, and the
 * count of live keys stays right. A miss here would answer a handled event as new.
 */
import { describe, expect, it } from 'vitest'
import { HashIndex, slot } from '../../packages/core/src/store/sqlite/generations.js'

/** A small deterministic generator (xorshift32), so a failure can be replayed. */
function random(seed: number): () => number {
  let x = seed >>> 0 || 1
  return () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return x >>> 0
  }
}

/** Whether `index` has hash `h` under generation `gen`. */
const has = (index: HashIndex, h: number, gen: number) => index.some(h, (found) => found === gen)

describe('HashIndex (SQLite generations)', () => {
  it('finds every live generation’s hashes and none of a retired one’s, through growth and shard rebuilds, and counts live keys', () => {
    const next = random(48)
    const index = new HashIndex()
    const live = new Map<number, Uint32Array>()
    const retired: Array<[number, Uint32Array]> = []
    for (let step = 0; step < 300; step++) {
      const gen = index.allocate()
      expect(live.has(gen)).toBe(false)
      // Some generations crowd a few shards (same top bits); every one has a hash all others have too; 0 is never a hash.
      const crowd = step % 3 === 0
      const hashes = Uint32Array.from({ length: 1 + (next() % (crowd ? 200 : 2_000)) }, (_, i) => {
        if (i === 3) return 0xdead_beef
        const h = crowd ? (next() & 0x003f_ffff) | ((next() % 4) << 22) : next()
        return h || 1
      })
      index.addAll(hashes, gen)
      live.set(gen, hashes)
      if (step % 4 === 1 && live.size > 3) {
        const [old, oldHashes] = live.entries().next().value as [number, Uint32Array]
        index.retire(old, oldHashes.length)
        live.delete(old)
        retired.push([old, oldHashes])
      }
    }
    // Collected, then one expect: an expect per key made this test take seconds.
    const missed: string[] = []
    for (const [gen, hashes] of live) for (const h of hashes) if (!has(index, h, gen)) missed.push(`${h} of ${gen}`)
    expect(missed).toEqual([])
    const wrong: string[] = []
    for (const [gen, hashes] of retired) {
      // A number given out again holds only its new generation's keys.
      const now = live.get(gen)
      for (const h of hashes.slice(0, 200)) if (has(index, h, gen) !== (now?.includes(h) ?? false)) wrong.push(`${h} of ${gen}`)
    }
    expect(wrong).toEqual([])
    expect(index.size).toBe([...live.values()].reduce((sum, hashes) => sum + hashes.length, 0))
  })

  it('gives a retired number out again only once every shard was made anew since, and all at once when 65,535 are used', () => {
    const index = new HashIndex()
    const first = index.allocate()
    index.addAll(Uint32Array.of(0x1234_5678), first)
    index.retire(first, 1)
    // Shards untouched since: a new number, not the retired one (its key would be taken for the new generation's).
    const second = index.allocate()
    expect(second).not.toBe(first)
    expect(has(index, 0x1234_5678, first)).toBe(false)
    // Numbers up to 65,535 first; then every shard is made anew and the retired one comes back.
    const given: number[] = []
    for (let n = 3; n <= 0xffff; n++) given.push(index.allocate())
    expect(given).toEqual(Array.from({ length: 0xffff - 2 }, (_, i) => i + 3))
    expect(index.allocate()).toBe(first)
    index.addAll(Uint32Array.of(0x0bad_cafe), first)
    expect(has(index, 0x1234_5678, first)).toBe(false)
    expect(has(index, 0x0bad_cafe, first)).toBe(true)
    expect(() => index.allocate()).toThrow('more than 65,535 generations')
  })

  it('does not give a number out again while one shard still holds its old keys', () => {
    const index = new HashIndex()
    const old = index.allocate()
    // A key in the last shard (top 10 bits all 1), then its generation retired.
    const stale = ((1023 << 22) | 5) >>> 0
    index.addAll(Uint32Array.of(stale), old)
    index.retire(old, 1)
    // Every other shard made anew: 12 keys each fill a new shard of 16 slots past 70 %.
    const filler = index.allocate()
    const hashes: number[] = []
    for (let shard = 0; shard < 1023; shard++) for (let k = 1; k <= 12; k++) hashes.push(((shard << 22) | k) >>> 0)
    index.addAll(Uint32Array.from(hashes), filler)
    const next = index.allocate()
    expect(next).not.toBe(old)
    expect(has(index, stale, next)).toBe(false)
  })

  it("places a hash inside its shard's slots, the highest in the last", () => {
    for (const size of [16, 17, 1000, 4_194_304]) {
      expect(slot(0, size)).toBe(0)
      expect(slot(2 ** 32 - 1, size)).toBe(size - 1)
      expect(slot(2 ** 22 - 1, size)).toBe(size - 1)
      expect(slot(2 ** 22, size)).toBe(0)
    }
  })

  it('reuses numbers in a store’s steady state (generations sealed and dropped) without running out', () => {
    const next = random(7)
    const index = new HashIndex()
    const live: Array<[number, Uint32Array]> = []
    let highest = 0
    for (let seal = 0; seal < 1_500; seal++) {
      const gen = index.allocate()
      highest = Math.max(highest, gen)
      const hashes = Uint32Array.from({ length: 1_000 }, () => next() || 1)
      index.addAll(hashes, gen)
      live.push([gen, hashes])
      if (live.length > 40) {
        const [old, oldHashes] = live.shift() as [number, Uint32Array]
        index.retire(old, oldHashes.length)
      }
    }
    // Every shard fills and is made anew every few dozen generations, freeing the retired numbers.
    expect(highest).toBeLessThan(400)
    const missed = live.flatMap(([gen, hashes]) => [...hashes.subarray(0, 100)].filter((h) => !has(index, h, gen)))
    expect(missed).toEqual([])
    expect(index.size).toBe(40 * 1_000)
  })
})

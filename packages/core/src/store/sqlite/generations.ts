/**
 * Done records in generations (schema version 3), so that the cost of an event stays flat as a
 * week of records piles up (issue 48). New done records go to a small current table,
 * `<table>_now`; once it holds `generationRecords` it is sealed: renamed to `<table>_g<id>` (no
 * copy), never written again, its keys' 32-bit hashes stored beside it (`<table>_gen`, a blob per
 * generation) and kept by every process in an in-memory index (hash → generation). A claim reads
 * the current table (small: its pages stay in SQLite's page cache) and looks the key's hash up in
 * memory; only a hash found (a duplicate, or by chance about one key in 2³² per sealed key) reads
 * that generation's table. With one table of 10 million random keys every claim and complete landed
 * on pages no other event had touched lately (3 more page reads an event; bench/RESULTS.md).
 *
 * Several processes share the file: each reads SQLite's schema version at the start of every
 * write batch and every lookup, inside that transaction, and reloads the generation list when it
 * changed (a seal or a drop is a schema change). A seal runs inside a batch's write transaction,
 * so no claim in any process can read between the rename and the list's new entry: a duplicate is
 * never answered as new. A generation is hashed after its seal, not in it: reading 50,000 keys
 * into JavaScript took 64 ms and hashing them 15–30 more, which held the batch, and every answer
 * waiting on the event loop, for 60–270 ms once a generation. Until all its keys are in a
 * process's index that process reads the generation by SQL on every claim (one primary-key search
 * in 50,000 records); each process hashes it `HASH_CHUNK` keys in each of its write batches
 * (claims' too), in byte order (the table never changes once sealed), adding them to its index as
 * it goes, and the first to finish stores the blob, the count and the latest expiry; a process
 * that meets a generation already hashed adds the stored hashes the same way, a chunk a batch
 * (all at once only when the store is made). A transaction that stored them and then rolled back
 * is seen at the next reload of the list, and the generation is hashed again. A generation whose
 * records have all expired is dropped whole by the purge (never before its latest expiry is known).
 *
 * A file of an older layout (one `<table>` of done records) is moved at upgrade: its table becomes
 * generation 1 (renamed, no copy). Up to `HASH_AT_UPGRADE` records it gets its hashes at once;
 * a larger one stays unhashed (read by SQL on every claim, the old cost) and is purged row by row
 * until it is empty, then dropped: the flat cost comes once its records from before the upgrade
 * have expired. `<table>` is then a one-row note without `expires_at` (`placeholderSql`): a process
 * of an older release still running on the file fails every claim, which its receiver answers 503,
 * so the sender retries against an upgraded one; it never answers a sealed event as new.
 *
 * `<table>_done` is a view of all done records (the current table and every generation), for the
 * console, the read-only store and people reading the file; the receiver's path never uses it.
 */
import { Cursor, prepareWalk } from './purge.js'
import type { Database, Statement } from './types.js'

/** Records in the current table at which it is sealed, by default. */
export const DEFAULT_GENERATION_RECORDS = 50_000
/**
 * At most this many live generations: the view `<table>_done` is one compound SELECT, and SQLite
 * allows 500 terms in one. The threshold also grows with the records kept (a 400th of them), so a
 * store reaches this only if its retention is shortened abruptly; then the current table grows
 * instead until generations expire (slower, still correct).
 */
const MAX_GENERATIONS = 400
/** A pre-generations table up to this many records gets its hashes at upgrade (about 1 s a million). */
const HASH_AT_UPGRADE = 1_000_000
/**
 * A purge step drops expired generations of at most this many times the done records written since
 * the last drop (a drop frees its pages in the step's transaction, 4–14 ms for 50,000 records): a
 * backlog goes at 20 times the arrival rate, spread out, where one drop every step (256 rows written)
 * stopped 20 batches in a row and doubled the answers' p99 while a backlog of a million went. Counted
 * in the dropped generations' own records, whatever `generationRecords` this process has, so that
 * processes sharing a file with different values drop together 20 times what all of them seal.
 */
const DROP_SPREAD = 20
/** Expired generations dropped in one purge step at most (each step also rebuilds the view once). */
const MAX_DROPS_PER_STEP = 64
/** Done records written that pay for dropping a generation of `records` (`DROP_SPREAD`). */
const dropCost = (records: number): number => Math.max(1, Math.ceil(records / DROP_SPREAD))
/** Keys of a new generation hashed per write batch (about 0.5 ms), more when several wait. */
export const HASH_CHUNK = 250
/** Index slots in use (live and retired keys) at which it is rebuilt, as a share of its size. */
const MAX_LOAD = 0.7

/**
 * The current table's DDL, and the generations' list: `uid` tells a generation from an earlier one
 * that had the same id (dropped, or sealed in a transaction that rolled back).
 */
export function currentTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${table}_now (key TEXT PRIMARY KEY NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS ${table}_gen (
      id INTEGER PRIMARY KEY NOT NULL, uid TEXT NOT NULL, records INTEGER, expires_max INTEGER, hashes BLOB
    );`
}

/**
 * `<table>` in version 3: not a table of done records any more, but one that no older release can
 * use. 0.1.0 reads no schema stamp and makes its tables with CREATE … IF NOT EXISTS: finding this
 * one, its statements on `expires_at` fail to prepare and it refuses to start, where an absent
 * `<table>` would have been made anew, empty, and every event answered as new. A running 0.2 process
 * fails its next claim the same way.
 */
export function placeholderSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${table} (note TEXT NOT NULL);
    INSERT INTO ${table} (note) SELECT 'Done records are in ${table}_now and ${table}_g<n> (schema version 3); the view ${table}_done reads them all.'
    WHERE NOT EXISTS (SELECT 1 FROM ${table});`
}

/**
 * FNV-1a over a key's UTF-16 units, 32 bits, never 0; or 0 for a key with a lone surrogate. Such a
 * key is stored by better-sqlite3 in bytes that read back as other text (\ud800 as ED A0 80, read
 * as three U+FFFD), so its hash at the seal would not be its hash at a claim: the claim reads every
 * generation by SQL instead (such keys never come from HTTP headers, only from direct calls).
 * @param key A dedup key.
 * @example
 * keyHash('default:msg_1') // a number in [1, 2³²)
 */
export function keyHash(key: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < key.length; i++) {
    const unit = key.charCodeAt(i)
    if (unit >= 0xd800 && unit <= 0xdfff) {
      const next = key.charCodeAt(i + 1)
      if (unit > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return 0
      h = Math.imul(h ^ unit, 0x01000193)
      h = Math.imul(h ^ next, 0x01000193)
      i++
      continue
    }
    h = Math.imul(h ^ unit, 0x01000193)
  }
  return h >>> 0 || 1
}

/** Shards of the index (by a hash's top bits): each grows and sheds retired keys on its own. */
const SHARD_BITS = 10
const SHARDS = 1 << SHARD_BITS
/** The hash bits that place a key inside its shard. */
const SLOT_SPAN = 2 ** (32 - SHARD_BITS)
/** Slots of a shard at least. */
const MIN_SLOTS = 16
/** A shard made anew holds its live keys about this full (± SPREAD / 2), so the next rebuild is well apart. */
const REBUILT_LOAD = 0.5
/** How full `reserve` makes a shard of its share (a shard's share varies by about 1 % at 10,000 keys). */
const RESERVED_LOAD = 0.55
/** The range of loads around REBUILT_LOAD and RESERVED_LOAD that shards are given, to spread their rebuilds. */
const SPREAD = 0.1
/** Local generation numbers: 1 … 65,535 (0: an empty slot's). */
const MAX_LOCAL = 0xffff

/**
 * Hash → generation (a local number, 1 … 65,535), in 1,024 shards by the hash's top 10 bits, each
 * an open-addressing table with linear probing; several keys may share a hash. A dropped
 * generation is retired at once (the caller answers nothing for its number from then on); its keys
 * stay in their slots until their shard is next made anew, which a shard does on its own when an
 * insert finds it 70 % full: it keeps only live keys, sized so they fill half of it. So no insert
 * and no retire ever walks the whole index: one table of 10 million keys was made anew in 0.8–1.6 s
 * on the event loop, every 1.7 million events at a steady 10 million; a shard of ~10,000 keys in
 * well under a millisecond. A retired number is given out again only once every shard has been
 * made anew since (until then its old keys could not be told from the new generation's); when no
 * number is free, every shard is made anew at once (only after 65,535 generations).
 */
export class HashIndex {
  readonly #hashes: Uint32Array[] = Array.from({ length: SHARDS }, () => new Uint32Array(MIN_SLOTS))
  readonly #gens: Uint16Array[] = Array.from({ length: SHARDS }, () => new Uint16Array(MIN_SLOTS))
  /** Slots in use in each shard (live and retired keys). */
  readonly #used = new Uint32Array(SHARDS)
  /** The retire count when each shard was last made anew. */
  readonly #cleanAt = new Float64Array(SHARDS)
  /** By local number: the retire count at its retirement (0: live or never used). */
  readonly #retiredAt = new Float64Array(MAX_LOCAL + 1)
  /** Retired numbers, oldest first. */
  #free: number[] = []
  #retires = 0
  #next = 1
  #live = 0

  /** Keys of live generations indexed. */
  get size(): number {
    return this.#live
  }

  /** A number for a new generation. */
  allocate(): number {
    const oldest = this.#free[0]
    if (oldest !== undefined && this.#clean(oldest)) return this.#reuse()
    if (this.#next <= MAX_LOCAL) return this.#next++
    if (oldest === undefined) throw new Error('more than 65,535 generations of done records in one store')
    for (let shard = 0; shard < SHARDS; shard++) this.#rebuild(shard)
    return this.#reuse()
  }

  /**
   * Sizes every empty shard for its share of `keys` keys about to be added (the store's load), so
   * that it is not made anew at each doubling on the way (2.0 s against 4.5 s for 10 million).
   */
  reserve(keys: number): void {
    for (let shard = 0; shard < SHARDS; shard++) {
      if (this.#used[shard] !== 0) continue
      // Each shard a little fuller or emptier than the next, so that they do not all come to be made anew in the same batch.
      const size = Math.max(MIN_SLOTS, Math.ceil(keys / SHARDS / (RESERVED_LOAD + SPREAD * (((shard * 0.618034) % 1) - 0.5))))
      this.#hashes[shard] = new Uint32Array(size)
      this.#gens[shard] = new Uint16Array(size)
    }
  }

  /** Adds hashes of generation `gen`. */
  addAll(hashes: Uint32Array, gen: number): void {
    for (const h of hashes) this.#put(h, gen)
    this.#live += hashes.length
  }

  /** Whether `test` holds for a generation that has a key of hash `h` (usually there is none). */
  some(h: number, test: (gen: number) => boolean): boolean {
    const shard = h >>> (32 - SHARD_BITS)
    const hashes = this.#hashes[shard] as Uint32Array
    const gens = this.#gens[shard] as Uint16Array
    const size = hashes.length
    for (let i = slot(h, size); hashes[i] !== 0; i = i + 1 === size ? 0 : i + 1) {
      if (hashes[i] === h) {
        const gen = gens[i] as number
        if (this.#retiredAt[gen] === 0 && test(gen)) return true
      }
    }
    return false
  }

  /** Retires a dropped generation of `keys` keys; the caller answers nothing for its number from now on. */
  retire(gen: number, keys: number): void {
    this.#retiredAt[gen] = ++this.#retires
    this.#free.push(gen)
    this.#live -= keys
  }

  /** Whether every shard was made anew since `gen` was retired. */
  #clean(gen: number): boolean {
    const at = this.#retiredAt[gen] as number
    for (let shard = 0; shard < SHARDS; shard++) if ((this.#cleanAt[shard] as number) < at) return false
    return true
  }

  #reuse(): number {
    const gen = this.#free.shift() as number
    this.#retiredAt[gen] = 0
    return gen
  }

  #put(h: number, gen: number): void {
    const shard = h >>> (32 - SHARD_BITS)
    if (((this.#used[shard] as number) + 1) / (this.#hashes[shard] as Uint32Array).length > MAX_LOAD) this.#rebuild(shard)
    const hashes = this.#hashes[shard] as Uint32Array
    const size = hashes.length
    let i = slot(h, size)
    while (hashes[i] !== 0) i = i + 1 === size ? 0 : i + 1
    hashes[i] = h
    ;(this.#gens[shard] as Uint16Array)[i] = gen
    this.#used[shard] = (this.#used[shard] as number) + 1
  }

  /** Makes a shard anew without its retired keys, its live ones (and one more) about half of it. */
  #rebuild(shard: number): void {
    const hashes = this.#hashes[shard] as Uint32Array
    const gens = this.#gens[shard] as Uint16Array
    let live = 0
    for (let i = 0; i < hashes.length; i++) if (hashes[i] !== 0 && this.#retiredAt[gens[i] as number] === 0) live++
    const size = Math.max(MIN_SLOTS, Math.ceil((live + 1) / (REBUILT_LOAD + SPREAD * (Math.random() - 0.5))))
    const into = new Uint32Array(size)
    const intoGens = new Uint16Array(size)
    for (let i = 0; i < hashes.length; i++) {
      const h = hashes[i] as number
      const gen = gens[i] as number
      if (h === 0 || this.#retiredAt[gen] !== 0) continue
      let j = slot(h, size)
      while (into[j] !== 0) j = j + 1 === size ? 0 : j + 1
      into[j] = h
      intoGens[j] = gen
    }
    this.#hashes[shard] = into
    this.#gens[shard] = intoGens
    this.#used[shard] = live
    this.#cleanAt[shard] = this.#retires
  }
}

/** A hash's home slot in a shard of `size` slots (from the bits under the shard's). */
export function slot(h: number, size: number): number {
  return Math.floor(((h % SLOT_SPAN) * size) / SLOT_SPAN)
}

/** One sealed generation as a process knows it. */
interface Generation {
  id: number
  /** Random, made at its seal: another generation given the same id later has another. */
  uid: string
  /** Its number in the index (1 … 65,535, reused once it is dropped). */
  local: number
  /** Without hashes (yet): read on every claim. */
  unhashed: boolean
  /** A large table from before generations, never hashed: walked by the purge row by row. */
  legacy: boolean
  records: number
  /** (key) → expires_at, prepared on first use. */
  find: Statement | undefined
  /** Its keys in the index so far (all of them once hashed). */
  indexed: number
  /** A generation being hashed, or added to the index, by this process, `HASH_CHUNK` keys a batch. */
  hashing: Hashing | undefined
}

/** Where this process is in hashing a generation and adding it to the index. */
interface Hashing extends Hashed {
  /**
   * The last key hashed, as its stored bytes (keys are read in byte order; null before the first
   * chunk). Not as text: a key with a lone surrogate reads back as other text, and a cursor made of
   * that text would skip the keys after it, and `key > ''` would skip the empty key.
   */
  after: Uint8Array | null
  /** Hashes added to the index (`made`: made, or, stored by another process, in hand). */
  added: number
  /** Reads its keys a chunk at a time: the first chunk, and the next after the cursor; undefined when the hashes came stored. */
  reads: { first: ChunkRead; next: ChunkRead } | undefined
}

/** The statements of one chunk (`{ limit }`, and `after`, the cursor, for a next one). */
interface ChunkRead {
  /** → the chunk's keys, in key order. */
  keys: Statement
  /** → [the chunk's last key as bytes (the next chunk's cursor), its latest expiry]. */
  end: Statement
}

/** Whether this machine stores a Uint32Array little-endian (every one Node runs on in practice). */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1

/** A blob of hashes, 4 bytes each, little-endian (a file may move to another machine). */
function blobOf(hashes: Uint32Array): Uint8Array {
  if (LITTLE_ENDIAN) return new Uint8Array(hashes.buffer, hashes.byteOffset, hashes.byteLength)
  const view = new DataView(new ArrayBuffer(hashes.length * 4))
  for (let i = 0; i < hashes.length; i++) view.setUint32(i * 4, hashes[i] as number, true)
  return new Uint8Array(view.buffer)
}

/** The hashes of a blob written by `blobOf`. */
function hashesOf(blob: Uint8Array): Uint32Array {
  const count = Math.floor(blob.byteLength / 4)
  if (LITTLE_ENDIAN) {
    const copy = new Uint8Array(count * 4)
    copy.set(blob.subarray(0, count * 4))
    return new Uint32Array(copy.buffer)
  }
  const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength)
  return Uint32Array.from({ length: count }, (_, i) => view.getUint32(i * 4, true))
}

/** Hashes made so far: `made` of `hashes` filled, and the latest expiry of the rows they came from. */
interface Hashed {
  hashes: Uint32Array
  made: number
  expiresMax: number | null
}

/** Adds the hashes of `keys` to `into` (its array grown when full). */
function hashKeys(into: Hashed, keys: readonly string[]): void {
  for (let i = 0; i < keys.length; i++) {
    if (into.made === into.hashes.length) {
      const grown = new Uint32Array(Math.max(1, into.hashes.length * 2))
      grown.set(into.hashes)
      into.hashes = grown
    }
    // A key read back with U+FFFD where it had a lone surrogate hashes as what it reads; no claim looks for that hash.
    into.hashes[into.made++] = keyHash(keys[i] as string) || 1
  }
}

/** Counts `at` (a latest expiry of some of the keys, null for none) into `into`'s latest expiry. */
function expiringBy(into: Hashed, at: number | null): void {
  if (at !== null && (into.expiresMax === null || at > into.expiresMax)) into.expiresMax = at
}

/** The hashes of every key of `from`, and its latest expiry. */
function hashTable(db: Database, from: string): { hashes: Uint32Array; expiresMax: number | null } {
  const keys = db.prepare(`SELECT key FROM ${from}`).pluck().all() as string[]
  const into: Hashed = { hashes: new Uint32Array(keys.length), made: 0, expiresMax: null }
  hashKeys(into, keys)
  expiringBy(into, db.prepare(`SELECT max(expires_at) FROM ${from}`).pluck().get() as number | null)
  return { hashes: into.hashes, expiresMax: into.expiresMax }
}

/** Makes `<table>_done` anew over the current table and the generations listed now (call in a write transaction). */
export function recreateDoneView(db: Database, table: string): void {
  const ids = db.prepare(`SELECT id FROM ${table}_gen ORDER BY id`).pluck().all() as number[]
  const arms = [`${table}_now`, ...ids.map((id) => `${table}_g${id}`)].map((name) => `SELECT key, expires_at FROM ${name}`)
  db.exec(`DROP VIEW IF EXISTS ${table}_done; CREATE VIEW ${table}_done AS ${arms.join(' UNION ALL ')}`)
}

/**
 * Renames a table of done records. With `legacy_alter_table` on for the moment, SQLite does not
 * re-check every view and trigger of the file: an app's view over a table it dropped would
 * otherwise fail every seal. No view or trigger refers to these tables (the store's own view is
 * dropped first and made anew).
 */
function renameTable(db: Database, from: string, to: string): void {
  db.pragma('legacy_alter_table = ON')
  try {
    db.exec(`ALTER TABLE ${from} RENAME TO ${to}`)
  } finally {
    db.pragma('legacy_alter_table = OFF')
  }
}

/**
 * Moves the done records of a file from before generations (`<table>`) into generation 1, at
 * upgrade (call in the upgrade's write transaction, after the new tables exist).
 */
export function moveToGenerations(db: Database, table: string): void {
  const records = db
    .prepare(`SELECT count(*) FROM (SELECT 1 FROM ${table} LIMIT ${HASH_AT_UPGRADE + 1})`)
    .pluck()
    .get() as number
  if (records === 0) {
    db.exec(`DROP TABLE ${table}`)
    return
  }
  renameTable(db, table, `${table}_g1`)
  const add = db.prepare(`INSERT INTO ${table}_gen (id, uid, records, expires_max, hashes) VALUES (1, ?, ?, ?, ?)`)
  if (records > HASH_AT_UPGRADE) {
    add.run(crypto.randomUUID(), null, null, null)
    return
  }
  const { hashes, expiresMax } = hashTable(db, `${table}_g1`)
  add.run(crypto.randomUUID(), hashes.length, expiresMax, blobOf(hashes))
}

/** The generations of one store's connection: what a claim reads, the seal and the drops. */
export class Generations {
  readonly #db: Database
  readonly #table: string
  readonly #records: number
  readonly #checkEvery: number
  readonly #schemaVersion: Statement
  readonly #list: Statement
  readonly #countNow: Statement
  readonly #purgeNow: Statement
  /** (now, most) → the expired generations, oldest first. */
  readonly #expired: Statement
  readonly #unlist: Statement
  readonly #index = new HashIndex()
  readonly #byId = new Map<number, Generation>()
  readonly #byLocal: (Generation | undefined)[] = [undefined]
  #unhashed: Generation[] = []
  /** The unhashed generations sealed here or by another process (not the legacy one), oldest first. */
  #toHash: Generation[] = []
  /** (id, uid) → the stored hashes, once some process stored them. */
  readonly #storedHashes: Statement
  /** (hashes, expires_max, records, id, uid): stores them unless another process did first. */
  readonly #storeHashes: Statement
  /** (id, uid, records): a new generation, its hashes and latest expiry to come. */
  readonly #listNew: Statement
  /** The schema version the list was read at; -1 = never read, or to be read anew. */
  #known = -1
  /** The list was read once: generations met later join the index a chunk a batch. */
  #loaded = false
  /** Records of the hashed generations (the seal's threshold grows with them). */
  #sealedRecords = 0
  /** Done records written by this process since the current table was last counted. */
  #sinceCount: number
  /**
   * Done records written that purge steps may still spend on drops, a generation costing a
   * `DROP_SPREAD`th of its records. While nothing has expired it keeps at most one of this
   * process's own generations' cost, so a quiet time makes no burst and the first one goes at once.
   */
  #dropCredit: number
  /** What one of this process's own generations costs to drop. */
  readonly #dropCost: number
  /** Generations listed in the file at the last `sync` (skipped expired ones too: the view's compound SELECT holds them all). */
  #listed = 0
  /** The purge's cursor over the unhashed generation, if any. */
  #legacy: { id: number; cursor: Cursor } | undefined
  readonly #warnSeal: (error: unknown) => void
  readonly #warnHash: (error: unknown) => void
  /** A hash step failed and was told; told again only after a generation was hashed whole. */
  #hashFailing = false
  /** A seal failed and was told; told again only after one succeeded. */
  #sealFailing = false

  constructor(
    db: Database,
    table: string,
    options: { generationRecords?: number; sealFailed?: (error: unknown) => void; hashFailed?: (error: unknown) => void } = {},
  ) {
    const generationRecords = options.generationRecords ?? DEFAULT_GENERATION_RECORDS
    this.#db = db
    this.#table = table
    this.#warnSeal = options.sealFailed ?? (() => {})
    this.#warnHash = options.hashFailed ?? (() => {})
    this.#records = generationRecords
    this.#checkEvery = Math.max(1, Math.min(5_000, Math.floor(generationRecords / 10)))
    // The first batch counts the current table (a file may have been filled while no store ran).
    this.#sinceCount = this.#checkEvery
    this.#dropCost = dropCost(generationRecords)
    this.#dropCredit = this.#dropCost
    this.#schemaVersion = db.prepare('PRAGMA schema_version').pluck()
    this.#list = db.prepare(
      // typeof(), not IS NULL: SQLite reads a blob's overflow pages for IS NULL in a result column (23–27 ms for 235 generations' hashes against 0.25 ms).
      `SELECT id, uid, typeof(hashes) = 'null' AS unhashed, records IS NULL AS legacy, coalesce(records, 0) AS records, expires_max AS expiresMax FROM ${table}_gen`,
    )
    this.#storedHashes = db.prepare(`SELECT hashes FROM ${table}_gen WHERE id = ? AND uid = ? AND hashes IS NOT NULL`).pluck()
    this.#storeHashes = db.prepare(
      `UPDATE ${table}_gen SET hashes = ?, expires_max = ?, records = ? WHERE id = ? AND uid = ? AND hashes IS NULL`,
    )
    this.#listNew = db.prepare(`INSERT INTO ${table}_gen (id, uid, records, expires_max, hashes) VALUES (?, ?, ?, NULL, NULL)`)
    this.#countNow = db.prepare(`SELECT count(*) FROM ${table}_now`).pluck()
    this.#purgeNow = db.prepare(`DELETE FROM ${table}_now WHERE expires_at <= ?`)
    this.#expired = db.prepare(`SELECT id, records FROM ${table}_gen WHERE expires_max <= ? ORDER BY id LIMIT ?`)
    this.#unlist = db.prepare(`DELETE FROM ${table}_gen WHERE id = ?`)
  }

  /**
   * Brings the list and the index up to the file (call at the start of every transaction that
   * reads done records: the seal and the drops of other processes are seen only here); `now` is the
   * store's clock (generations whose every record expired by then are left out).
   */
  sync(now: number): void {
    const version = this.#schemaVersion.get() as number
    if (version === this.#known) return
    const rows = this.#list.all() as {
      id: number
      uid: string
      unhashed: number
      legacy: number
      records: number
      expiresMax: number | null
    }[]
    // Every record expired (its latest expiry stored, and past): not indexed nor read, whatever it holds
    // is not done any more; the purge drops it. A store opened after a quiet time would otherwise load
    // all of it. (One met earlier, before its hashes were stored, stays in the index until dropped.)
    const expired = (row: { expiresMax: number | null }) => row.expiresMax !== null && row.expiresMax <= now
    // By uid, not id: an id is given again after its generation was dropped (or its seal rolled back).
    const listed = new Set(rows.map((row) => row.uid))
    this.#listed = rows.length
    for (const generation of this.#byId.values()) {
      if (!listed.has(generation.uid)) this.#forget(generation)
    }
    if (!this.#loaded) this.#index.reserve(rows.reduce((sum, row) => sum + (row.unhashed === 1 || expired(row) ? 0 : row.records), 0))
    for (const row of rows) {
      const known = this.#byId.get(row.id)
      if (known?.uid === row.uid) {
        // Hashed here, but the transaction that stored its hashes rolled back: met again (hashed anew
        // and stored), or no process would store them and it would never be dropped.
        if (row.unhashed === 0 || known.unhashed || known.legacy) continue
        this.#forget(known)
      }
      if (expired(row)) continue
      const local = this.#index.allocate()
      const generation: Generation = {
        id: row.id,
        uid: row.uid,
        local,
        unhashed: row.unhashed === 1,
        legacy: row.legacy === 1,
        records: row.records,
        find: undefined,
        indexed: 0,
        hashing: undefined,
      }
      this.#byId.set(row.id, generation)
      this.#byLocal[local] = generation
      if (!generation.unhashed && !this.#loaded) {
        // At the store's start, all at once: no answer waits yet.
        const hashes = hashesOf(this.#storedHashes.get(row.id, row.uid) as Uint8Array)
        this.#index.addAll(hashes, local)
        generation.indexed = hashes.length
        this.#sealedRecords += row.records
        continue
      }
      // Read by SQL until it is in the index: hashed here, or its stored hashes added, a chunk a batch.
      generation.unhashed = true
      this.#unhashed.push(generation)
      if (!generation.legacy) this.#toHash.push(generation)
    }
    this.#known = version
    this.#loaded = true
  }

  /**
   * Whether a sealed generation holds a live done record of `key` (call after `sync`, in the same
   * transaction). The current table is the caller's to read first.
   */
  isDone(key: string, now: number): boolean {
    for (const generation of this.#unhashed) {
      if (this.#live(generation, key, now)) return true
    }
    if (this.#index.size === 0) return false
    const h = keyHash(key)
    if (h === 0) {
      for (const generation of this.#byId.values()) {
        if (!generation.unhashed && this.#live(generation, key, now)) return true
      }
      return false
    }
    return this.#index.some(h, (local) => {
      const generation = this.#byLocal[local]
      return generation !== undefined && this.#live(generation, key, now)
    })
  }

  /**
   * Counts `written` new done records and, when the current table is full, seals it (call inside
   * the batch's write transaction, after its completes).
   */
  wrote(written: number, now: number): void {
    if (this.#toHash.length > 0) this.#tryHashStep()
    this.#sinceCount += written
    if (this.#sinceCount < this.#checkEvery) return
    this.#sinceCount = 0
    const threshold = Math.max(this.#records, Math.ceil(this.#sealedRecords / MAX_GENERATIONS))
    if (this.#listed >= MAX_GENERATIONS - 1) return
    let records = this.#countNow.get() as number
    if (records < threshold) return
    // Records already expired are not sealed: a generation is dropped only once all its records
    // expired, and these would wait there for the newest. Full no more once they are gone.
    if (this.#purgeNow.run(now).changes > 0) records = this.#countNow.get() as number
    if (records >= threshold) this.#seal(records, now)
  }

  /** Keys in the in-memory index (live generations' and retired ones' not yet shed). */
  get indexedKeys(): number {
    return this.#index.size
  }

  /** Whether a generation waits to be hashed or added to the index (a write batch without done records then calls `wrote(0, now)` too). */
  get hashing(): boolean {
    return this.#toHash.length > 0
  }

  /**
   * Reads the list anew at the next `sync`: after a transaction that sealed or dropped failed. Its
   * schema version was read before the rollback, and a later change by another process could
   * bring the file to that same number.
   */
  invalidate(): void {
    this.#known = -1
  }

  /**
   * A seal that failed (its savepoint rolled back; the current table is sealed at a later check):
   * told once until a seal succeeds again. The list is read anew at the next `sync`.
   */
  sealFailed(error: unknown): void {
    this.invalidate()
    if (this.#sealFailing) return
    this.#sealFailing = true
    this.#warnSeal(error)
  }

  /**
   * One purge step (call inside a write transaction): drops generations whose every record expired,
   * oldest first, as far as the done records `written` since the last drop pay for (`DROP_SPREAD`),
   * and walks the unhashed one, if any, `walk` rows. Returns the records deleted.
   */
  purgeStep(walk: number, written: number, now: number): number {
    this.sync(now)
    this.#dropCredit += written
    let deleted = this.#dropPaced(now)
    const legacy = this.#legacyCursor()
    if (legacy) {
      deleted += legacy.cursor.window(walk, now)
      if (legacy.cursor.at === '') this.#dropIfEmpty(legacy.id, now)
    }
    return deleted
  }

  /** Drops every expired generation and walks the unhashed one once whole (`purgeExpired`). */
  purgeRound(walk: number, now: number): number {
    this.sync(now)
    let deleted = this.#dropAllExpired(now)
    const legacy = this.#legacyCursor()
    if (legacy) {
      deleted += legacy.cursor.round(walk, now)
      this.#dropIfEmpty(legacy.id, now)
    }
    return deleted
  }

  #live(generation: Generation, key: string, now: number): boolean {
    generation.find ??= this.#db.prepare(`SELECT expires_at FROM ${this.#table}_g${generation.id} WHERE key = ?`).pluck()
    const at = generation.find.get(key) as number | undefined
    return at !== undefined && at > now
  }

  #forget(generation: Generation): void {
    this.#byId.delete(generation.id)
    this.#byLocal[generation.local] = undefined
    if (generation.unhashed) this.#readBySqlNoMore(generation)
    else this.#sealedRecords -= generation.records
    this.#index.retire(generation.local, generation.indexed)
    if (this.#legacy?.id === generation.id) this.#legacy = undefined
  }

  /**
   * Seals the current table, of `records` records, as the next generation: renamed and listed (its
   * hashes to come, `#hashStep`), a new current table made.
   */
  #seal(records: number, now: number): void {
    const db = this.#db
    const t = this.#table
    const id = ((db.prepare(`SELECT max(id) FROM ${t}_gen`).pluck().get() as number | null) ?? 0) + 1
    db.exec(`DROP VIEW IF EXISTS ${t}_done`)
    renameTable(db, `${t}_now`, `${t}_g${id}`)
    db.exec(currentTableSql(t))
    this.#listNew.run(id, crypto.randomUUID(), records)
    recreateDoneView(db, t)
    this.sync(now)
    this.#sealFailing = false
  }

  /**
   * Hashes the next `HASH_CHUNK` keys (times the generations waiting) of the oldest generation not
   * yet in the index and adds them to it, or adds as many of the hashes another process stored;
   * once all are in, stores them (unless another process did first) and stops reading it by SQL.
   */
  #hashStep(): void {
    const generation = this.#toHash[0] as Generation
    const limit = HASH_CHUNK * this.#toHash.length
    generation.hashing ??= this.#startHashing(generation)
    const work = generation.hashing
    let done: boolean
    if (work.reads === undefined) {
      done = work.made - work.added <= limit
      this.#addHashes(generation, work, done ? work.made : work.added + limit)
    } else {
      const params = work.after === null ? { limit } : { after: work.after, limit }
      const read = work.after === null ? work.reads.first : work.reads.next
      const keys = read.keys.all(params) as string[]
      hashKeys(work, keys)
      // The same chunk again (the table never changes once sealed): its last key as bytes, and its latest expiry.
      const [last, latest] = read.end.get(params) as [Uint8Array | null, number | null]
      expiringBy(work, latest)
      this.#addHashes(generation, work, work.made)
      done = keys.length < limit
      if (!done) {
        if (!last) throw new Error(`a chunk of ${this.#table}_g${generation.id} came without its last key`)
        work.after = last
      } else {
        this.#storeHashes.run(blobOf(work.hashes.subarray(0, work.made)), work.expiresMax, work.made, generation.id, generation.uid)
        generation.records = work.made
      }
    }
    if (!done) return
    this.#hashFailing = false
    generation.unhashed = false
    generation.hashing = undefined
    this.#readBySqlNoMore(generation)
    this.#sealedRecords += generation.records
  }

  /** Takes a generation off the ones read by SQL on every claim and the ones to hash. */
  #readBySqlNoMore(generation: Generation): void {
    this.#unhashed = this.#unhashed.filter((other) => other !== generation)
    this.#toHash = this.#toHash.filter((other) => other !== generation)
  }

  /** From the hashes another process stored, if it did; else from the generation's table, in key order. */
  #startHashing(generation: Generation): Hashing {
    const stored = this.#storedHashes.get(generation.id, generation.uid) as Uint8Array | undefined
    const hashes = stored === undefined ? new Uint32Array(Math.max(1, generation.records)) : hashesOf(stored)
    if (stored !== undefined) return { after: null, hashes, made: hashes.length, added: 0, expiresMax: null, reads: undefined }
    // The keys alone (strings, no row arrays: better-sqlite3 fills those through V8's slow element
    // stores), then one row for the chunk: its last key as bytes (a Buffer a row made garbage enough
    // to add pauses) and its latest expiry, by a second walk of the same range. A window function
    // marking the last row in one statement cost twice the CPU (an ephemeral table written and read
    // back: 102–137 ms against 43–72 ms to read and hash 55,000 keys).
    const range = (where: string) => `FROM ${this.#table}_g${generation.id} ${where} ORDER BY key LIMIT @limit`
    const chunk = (where: string): ChunkRead => ({
      keys: this.#db.prepare(`SELECT key ${range(where)}`).pluck(),
      end: this.#db.prepare(`SELECT CAST(max(key) AS BLOB), max(expires_at) FROM (SELECT key, expires_at ${range(where)})`).raw(),
    })
    const reads = { first: chunk(''), next: chunk('WHERE key > CAST(@after AS TEXT)') }
    return { after: null, hashes, made: 0, added: 0, expiresMax: null, reads }
  }

  /**
   * A hash step, apart from the seal: one that fails (told once until a generation is hashed whole) leaves the
   * generation to be met again from the start (its keys already added are retired with its number),
   * and the seals go on.
   */
  #tryHashStep(): void {
    try {
      this.#hashStep()
    } catch (error) {
      // An error that ended the whole transaction (a full disk, an I/O error) fails the batch: going
      // on would run the seal's statements outside any transaction, each committed alone.
      if (!this.#db.inTransaction) throw error
      const generation = this.#toHash[0]
      if (generation !== undefined) this.#forget(generation)
      this.invalidate()
      if (this.#hashFailing) return
      this.#hashFailing = true
      this.#warnHash(error)
    }
  }

  /** Adds the hashes in hand up to `until` to the index. */
  #addHashes(generation: Generation, work: Hashing, until: number): void {
    this.#index.addAll(work.hashes.subarray(work.added, until), generation.local)
    generation.indexed += until - work.added
    work.added = until
  }

  /** Drops the oldest expired generations the credit pays for; keeps no more credit than one own generation's cost when none is left. */
  #dropPaced(now: number): number {
    const candidates = this.#expired.all(now, MAX_DROPS_PER_STEP) as { id: number; records: number }[]
    const ids: number[] = []
    let records = 0
    for (const candidate of candidates) {
      const cost = dropCost(candidate.records)
      if (this.#dropCredit < cost) break
      this.#dropCredit -= cost
      ids.push(candidate.id)
      records += candidate.records
    }
    if (ids.length > 0) this.#drop(ids, now)
    if (ids.length === candidates.length) this.#dropCredit = Math.min(this.#dropCredit, this.#dropCost)
    return records
  }

  /** Drops every expired generation at once (`purgeExpired`, for scripts). */
  #dropAllExpired(now: number): number {
    const expired = this.#expired.all(now, -1) as { id: number; records: number }[]
    if (expired.length === 0) return 0
    this.#drop(
      expired.map((row) => row.id),
      now,
    )
    return expired.reduce((sum, row) => sum + row.records, 0)
  }

  /** Drops the unhashed generation once its walk found it empty (its rows were counted as the walk deleted them). */
  #dropIfEmpty(id: number, now: number): void {
    const any = this.#db.prepare(`SELECT 1 FROM ${this.#table}_g${id} LIMIT 1`).pluck().get()
    if (any === undefined) this.#drop([id], now)
  }

  #drop(ids: number[], now: number): void {
    const t = this.#table
    this.#db.exec(`DROP VIEW IF EXISTS ${t}_done`)
    for (const id of ids) {
      this.#db.exec(`DROP TABLE IF EXISTS ${t}_g${id}`)
      this.#unlist.run(id)
    }
    recreateDoneView(this.#db, t)
    this.sync(now)
  }

  #legacyCursor(): { id: number; cursor: Cursor } | undefined {
    const generation = this.#unhashed.find((other) => other.legacy)
    if (generation === undefined) return undefined
    if (this.#legacy?.id !== generation.id) {
      this.#legacy = { id: generation.id, cursor: new Cursor(prepareWalk(this.#db, `${this.#table}_g${generation.id}`)) }
    }
    return this.#legacy
  }
}

// A small bounded cache in front of a look-up by key, for the events beacon,
// the one route anyone can flood with made-up ids. Answers are kept for a
// short time, "not found" included, so repeating an id costs nothing; and the
// keys missed meanwhile are looked up together, one query per round (one
// round in flight at a time), so a flood of distinct made-up ids costs the
// database one query per round trip, not one per request.
//
// A flood must not cost the real ids their place either. "Found" and "not
// found" answers are kept in two maps, each with its own bound, so made-up
// ids can only ever push out other made-up ids; found answers are kept in
// least-recently-used order, so the ids in use stay. And a key known to exist
// (held, or recently pushed out of the found map) is looked up even when the
// queue of waiting keys is full: only keys never seen found are shed.

export interface LookupCacheOptions<V> {
  /** Looks up many keys in one query; a key absent from the answer does not exist. */
  load(keys: string[]): Promise<Map<string, V>>
  /** Found answers kept at most; the least recently used are dropped first. */
  maxEntries: number
  /** "Not found" answers kept at most, apart from the found ones; the oldest are dropped first. Default: maxEntries. */
  maxMissingEntries?: number
  /** How long a found answer is used before asking again. */
  foundTtlMs: number
  /** How long a "not found" is used before asking again. */
  missingTtlMs: number
  /**
   * Keys never seen found waiting for a look-up at most. Past it (a flood of
   * distinct ids), such a key is answered "not found" without asking: the
   * beacon is dropped, as it would be for an unknown id. Keys known to exist
   * are not counted and never shed.
   */
  maxPending: number
}

interface Entry<V> {
  value: V
  expiresAt: number
}

interface Waiter<V> {
  resolve(value: V | null): void
  reject(err: unknown): void
}

export class LookupCache<V> {
  /** Found answers, least recently used first. */
  private readonly found = new Map<string, Entry<V>>()
  /** "Not found" answers (expiry, epoch ms), oldest first. */
  private readonly missing = new Map<string, number>()
  /** Keys lately pushed out of `found` (bounded, oldest first): known to exist, so never shed. */
  private readonly evicted = new Set<string>()
  private readonly pending = new Map<string, Array<Waiter<V>>>()
  /** Keys in `pending` that count against maxPending (never seen found). */
  private pendingUnknown = 0
  private loading = false
  private readonly maxMissingEntries: number
  private readonly maxEvicted: number
  /** Queries run so far (for tests and the bench). */
  loads = 0
  /** Keys answered "not found" without a query because too many were waiting. */
  shed = 0

  constructor(private readonly options: LookupCacheOptions<V>) {
    this.maxMissingEntries = options.maxMissingEntries ?? options.maxEntries
    // Enough to carry the ids pushed out by a burst of new real ones; a few dozen bytes each.
    this.maxEvicted = Math.max(16, Math.ceil(options.maxEntries / 4))
  }

  /**
   * The value for key, or null when it does not exist. A found answer past
   * its TTL is still given while it is asked again in the background, so a
   * known id never waits, nor is dropped when a flood fills maxPending.
   */
  get(key: string, now = Date.now()): Promise<V | null> {
    const entry = this.found.get(key)
    if (entry) {
      // Most recently used: to the back of the map, the last to be dropped.
      this.found.delete(key)
      this.found.set(key, entry)
      if (entry.expiresAt <= now && !this.pending.has(key)) {
        this.pending.set(key, [])
        this.startLoading()
      }
      return Promise.resolve(entry.value)
    }
    const missingUntil = this.missing.get(key)
    if (missingUntil !== undefined) {
      if (missingUntil > now) return Promise.resolve(null)
      this.missing.delete(key)
    }
    let waiters = this.pending.get(key)
    if (!waiters) {
      const known = this.evicted.has(key)
      if (!known) {
        if (this.pendingUnknown >= this.options.maxPending) {
          this.shed++
          return Promise.resolve(null)
        }
        this.pendingUnknown++
      }
      this.pending.set(key, (waiters = []))
    }
    const answer = new Promise<V | null>((resolve, reject) => waiters.push({ resolve, reject }))
    this.startLoading()
    return answer
  }

  private startLoading(): void {
    if (this.loading) return
    this.loading = true
    // The keys missed in this turn of the event loop go in the same query.
    setImmediate(() => void this.loadPending())
  }

  /** Found answers held now (at most maxEntries). */
  get size(): number {
    return this.found.size
  }

  /** "Not found" answers held now (at most maxMissingEntries). */
  get missingSize(): number {
    return this.missing.size
  }

  private async loadPending(): Promise<void> {
    while (this.pending.size > 0) {
      const round = new Map(this.pending)
      this.pending.clear()
      this.pendingUnknown = 0
      this.loads++
      let found: Map<string, V>
      try {
        found = await this.options.load([...round.keys()])
      } catch (err) {
        // Nothing is cached: the next request for these keys asks again.
        for (const waiters of round.values()) for (const w of waiters) w.reject(err)
        continue
      }
      const now = Date.now()
      for (const [key, waiters] of round) {
        const value = found.get(key) ?? null
        this.remember(key, value, now)
        for (const w of waiters) w.resolve(value)
      }
    }
    this.loading = false
  }

  private remember(key: string, value: V | null, now: number): void {
    this.evicted.delete(key)
    if (value === null) {
      this.found.delete(key)
      this.missing.delete(key)
      this.missing.set(key, now + this.options.missingTtlMs)
      // A Map iterates in insertion order: the first keys are the oldest answers.
      while (this.missing.size > this.maxMissingEntries) this.missing.delete(this.missing.keys().next().value!)
      return
    }
    this.missing.delete(key)
    this.found.delete(key)
    this.found.set(key, { value, expiresAt: now + this.options.foundTtlMs })
    while (this.found.size > this.options.maxEntries) {
      const oldest = this.found.keys().next().value!
      this.found.delete(oldest)
      this.evicted.add(oldest)
      if (this.evicted.size > this.maxEvicted) this.evicted.delete(this.evicted.values().next().value!)
    }
  }
}

// A small bounded cache in front of a look-up by key, for the events beacon,
// the one route anyone can flood with made-up ids. Answers are kept for a
// short time, "not found" included, so repeating an id costs nothing; and the
// keys missed meanwhile are looked up together, one query per round (one
// round in flight at a time), so a flood of distinct made-up ids costs the
// database one query per round trip, not one per request.

export interface LookupCacheOptions<V> {
  /** Looks up many keys in one query; a key absent from the answer does not exist. */
  load(keys: string[]): Promise<Map<string, V>>
  /** Answers kept at most; the oldest are dropped first. */
  maxEntries: number
  /** How long a found answer is used before asking again. */
  foundTtlMs: number
  /** How long a "not found" is used before asking again. */
  missingTtlMs: number
  /**
   * Keys waiting for a look-up at most. Past it (a flood of distinct ids), a
   * new key is answered "not found" without asking: the beacon is dropped,
   * as it would be for an unknown id.
   */
  maxPending: number
}

interface Entry<V> {
  value: V | null
  expiresAt: number
}

interface Waiter<V> {
  resolve(value: V | null): void
  reject(err: unknown): void
}

export class LookupCache<V> {
  private readonly entries = new Map<string, Entry<V>>()
  private readonly pending = new Map<string, Array<Waiter<V>>>()
  private loading = false
  /** Queries run so far (for tests and the bench). */
  loads = 0
  /** Keys answered "not found" without a query because too many were waiting. */
  shed = 0

  constructor(private readonly options: LookupCacheOptions<V>) {}

  /** The value for key, or null when it does not exist. */
  get(key: string, now = Date.now()): Promise<V | null> {
    const entry = this.entries.get(key)
    if (entry && entry.expiresAt > now) return Promise.resolve(entry.value)
    if (entry) this.entries.delete(key)
    let waiters = this.pending.get(key)
    if (!waiters) {
      if (this.pending.size >= this.options.maxPending) {
        this.shed++
        return Promise.resolve(null)
      }
      this.pending.set(key, (waiters = []))
    }
    const answer = new Promise<V | null>((resolve, reject) => waiters.push({ resolve, reject }))
    if (!this.loading) {
      this.loading = true
      // The keys missed in this turn of the event loop go in the same query.
      setImmediate(() => void this.loadPending())
    }
    return answer
  }

  /** Answers held now (at most maxEntries). */
  get size(): number {
    return this.entries.size
  }

  private async loadPending(): Promise<void> {
    while (this.pending.size > 0) {
      const round = new Map(this.pending)
      this.pending.clear()
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
    const ttl = value === null ? this.options.missingTtlMs : this.options.foundTtlMs
    this.entries.delete(key)
    this.entries.set(key, { value, expiresAt: now + ttl })
    // A Map iterates in insertion order: the first keys are the oldest answers.
    while (this.entries.size > this.options.maxEntries) this.entries.delete(this.entries.keys().next().value!)
  }
}

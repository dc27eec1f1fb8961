// A claim that PostgreSQL applies while the claimer never hears back: the
// claim is held inside the server by a table lock, the claimer's connection
// (through a TCP relay) is cut, then the lock is released and the claim
// commits. What a worker must do about rows it does not know it holds.
import pg from 'pg'
import type { TcpRelay } from './tcp-relay.ts'

/** Resolves once check() is true; throws after timeoutMs. */
export async function until(check: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
  const start = Date.now()
  while (!(await check())) {
    if (Date.now() - start > timeoutMs) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/**
 * Locks `table` on databaseUrl, calls start() (which begins claiming from it
 * through relay), waits until the claim (a FOR UPDATE SKIP LOCKED) waits on
 * the lock, cuts the relay, and releases the lock so the claim commits.
 */
export async function loseClaimAnswer(databaseUrl: string, table: string, relay: TcpRelay, start: () => Promise<void>): Promise<void> {
  const locker = new pg.Client({ connectionString: databaseUrl })
  await locker.connect()
  try {
    await locker.query('BEGIN')
    await locker.query(`LOCK TABLE ${pg.escapeIdentifier(table)} IN ACCESS EXCLUSIVE MODE`)
    await start()
    await until(async () => {
      const waiting = await locker.query(
        `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE SKIP LOCKED%' AND datname = current_database()`,
      )
      return waiting.rows.length > 0
    })
    // The connection drops with the claim in flight; then the claim goes through, and commits, in the server.
    relay.reset()
    await locker.query('COMMIT')
  } finally {
    await locker.end()
  }
}

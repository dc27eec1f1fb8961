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
 * the lock (the only statement that touches the table meanwhile), cuts the relay, and releases the lock so the claim commits.
 */
export async function loseClaimAnswer(databaseUrl: string, table: string, relay: TcpRelay, start: () => Promise<void>): Promise<void> {
  const locker = new pg.Client({ connectionString: databaseUrl })
  await locker.connect()
  try {
    await locker.query('BEGIN')
    await locker.query(`LOCK TABLE ${pg.escapeIdentifier(table)} IN ACCESS EXCLUSIVE MODE`)
    await start()
    await until(async () => {
      // Read from pg_locks, not from pg_stat_activity's query text: a statement
      // sent with parameters can wait on the table while it is still parsed,
      // before pg_stat_activity shows its text (seen with the webhook claim).
      const waiting = await locker.query(
        `SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
          WHERE NOT l.granted AND c.relname = $1 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        [table],
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

// `herald doctor`: checks a configuration the way an operator needs before
// going live, prints every check (with the fix for each failure) and answers
// the exit code: 1 when any check failed. It reads the configuration through
// load (config.ts), so a setting that does not even parse is reported too.
import { ConfigError, type Config } from '../config.ts'
import { openDatabase, type Database } from '../db/database.ts'
import { checkAdminToken, checkClock, checkDatabase, checkMigrations, checkOutboundRules, checkPorts, checkPublicUrl, checkRedis, checkTrustProxy, checkVapidSubject, type CheckResult } from './checks.ts'

export interface DoctorOptions {
  /** This machine's clock (tests set it apart from the database's). */
  now?: () => number
  /** Where the report goes. Default: stdout. */
  print?: (line: string) => void
}

export async function runDoctor(load: () => Config, options: DoctorOptions = {}): Promise<{ exitCode: number; results: CheckResult[] }> {
  const print = options.print ?? ((line: string) => console.log(line))
  const results: CheckResult[] = []
  const report = (result: CheckResult) => {
    results.push(result)
    const mark = result.outcome === 'ok' ? 'ok  ' : result.outcome === 'skip' ? 'skip' : 'FAIL'
    print(`${mark}  ${result.name.padEnd(15)} ${result.detail}`)
    if (result.fix) print(`      ${''.padEnd(15)} fix: ${result.fix}`)
  }
  let config: Config
  try {
    config = load()
    report({ name: 'configuration', outcome: 'ok', detail: `read (NODE_ENV=${config.env})` })
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    report({ name: 'configuration', outcome: 'fail', detail: err.message, fix: 'correct that setting; nothing else can be checked before' })
    return finish(results, print)
  }
  report(checkPublicUrl(config))
  report(checkVapidSubject(config))
  report(checkAdminToken(config))
  report(checkOutboundRules(config))
  report(checkTrustProxy(config))
  let db: Database | null = null
  try {
    const database = await checkDatabase(config, () =>
      openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1, connectTimeoutMs: config.dbConnectTimeoutMs }),
    )
    db = database.db
    report(database.result)
    report(await checkMigrations(db))
    report(await checkClock(db, options.now))
  } finally {
    await db?.close()
  }
  report(await checkRedis(config))
  report(await checkPorts(config))
  return finish(results, print)
}

function finish(results: CheckResult[], print: (line: string) => void): { exitCode: number; results: CheckResult[] } {
  const failed = results.filter((r) => r.outcome === 'fail').length
  print(failed === 0 ? 'All checks passed.' : `${failed} check${failed === 1 ? '' : 's'} failed.`)
  return { exitCode: failed === 0 ? 0 : 1, results }
}

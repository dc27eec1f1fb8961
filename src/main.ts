// The `herald` command: `serve` runs the service, the rest are operator tasks
// that talk to the database directly (so they work before the server runs).
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig, type Role } from './platform/config.ts'
import { openDatabase } from './platform/db/database.ts'
import { DataDirLockedError } from './platform/db/data-dir-lock.ts'
import { migrate } from './platform/db/migrate.ts'
import { runProjectCommand, PROJECT_COMMANDS_HELP } from './projects/cli.ts'

const HELP = `herald: self-hosted web push notifications

  herald serve [--role api|worker|all]   run the service (default: all, in one process)
  herald db migrate                      apply database migrations and exit
${PROJECT_COMMANDS_HELP}
Configuration comes from the environment; see README.md.`

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  const config = loadConfig()
  if (!command || command === 'help' || command === '--help') {
    console.log(HELP)
    return 0
  }
  if (command === 'serve') {
    const { values } = parseArgs({ args: rest, options: { role: { type: 'string', default: 'all' } } })
    const role = values.role as Role
    if (!['api', 'worker', 'all'].includes(role)) throw new ConfigError(`--role must be api, worker or all, got "${role}"`)
    // Loaded only here, so operator commands start without the server's code.
    const { serve } = await import('./serve.ts')
    await serve(config, role)
    return -1 // keeps running
  }
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
  try {
    if (command === 'db' && rest[0] === 'migrate') {
      const applied = await migrate(db)
      console.log(JSON.stringify({ applied }))
      return 0
    }
    await migrate(db)
    const handled = await runProjectCommand(db, config, command, rest)
    if (handled === null) {
      console.error(`Unknown command "${[command, ...rest].join(' ')}".\n\n${HELP}`)
      return 2
    }
    return handled
  } finally {
    await db.close()
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code)
  },
  (err) => {
    if (err instanceof ConfigError) console.error(`Configuration error: ${err.message}`)
    else if (err instanceof DataDirLockedError) console.error(err.message)
    else console.error(err instanceof Error ? err.message : err)
    process.exit(1)
  },
)

// The `herald` command: `serve` runs the service, the rest are operator tasks
// that talk to the database directly (so they work before the server runs).
// First: on a Node.js older than the floor, stop here with one line that names it.
import './platform/node-floor.ts'
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig, type Role } from './platform/config.ts'
import { openDatabase } from './platform/db/database.ts'
import { DataDirLockedError } from './platform/db/data-dir-lock.ts'
import { migrate } from './platform/db/migrate.ts'
import { runProjectCommand, PROJECT_COMMANDS_HELP } from './projects/cli.ts'
import { VERSION } from './platform/version.ts'
import { runSubscriberCommand, SUBSCRIBER_COMMANDS_HELP } from './subscribers/cli.ts'
import { BACKUP_COMMANDS_HELP, runBackupCommand } from './backup/cli.ts'

const HELP = `herald: self-hosted web push notifications

  herald serve [--role api|worker|all]   run the service (default: all, in one process)
  herald --version                       print the release (package.json's version)
  herald db migrate                      apply database migrations and exit
  herald doctor                          check this configuration before going live (public URL,
                                         VAPID subject, operator token, database and migrations,
                                         clock, Redis, ports); exits 1 when a check fails
${PROJECT_COMMANDS_HELP}${SUBSCRIBER_COMMANDS_HELP}${BACKUP_COMMANDS_HELP}
  herald dev push-service [--port N] [--delay-ms N] [--host H] [--public-url URL]
                                         run a web push service for development: hands out
                                         subscriptions, verifies VAPID, decrypts and records
                                         every push, fails on request (default port 8090,
                                         delay 0 ms, host 127.0.0.1; --public-url is the base
                                         URL workers on other machines reach it at, written
                                         into endpoints; prints how to use it)

Configuration comes from the environment; see README.md.`

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  if (!command || command === 'help' || command === '--help') {
    console.log(HELP)
    return 0
  }
  if (command === '--version' || command === 'version') {
    console.log(VERSION)
    return 0
  }
  // Needs neither configuration nor a database.
  if (command === 'dev') return runDevCommand(rest)
  // Reads the configuration itself: one that does not parse is one of its findings.
  if (command === 'doctor') {
    const { runDoctor } = await import('./platform/doctor/doctor.ts')
    return (await runDoctor(() => loadConfig())).exitCode
  }
  const config = loadConfig()
  if (command === 'serve') {
    const { values } = parseArgs({ args: rest, options: { role: { type: 'string', default: 'all' } } })
    const role = values.role as Role
    if (!['api', 'worker', 'all'].includes(role)) throw new ConfigError(`--role must be api, worker or all, got "${role}"`)
    // Loaded only here, so operator commands start without the server's code.
    const { serve } = await import('./serve.ts')
    await serve(config, role)
    return -1 // keeps running
  }
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, embeddedThread: config.embeddedThread })
  try {
    if (command === 'db' && rest[0] === 'migrate') {
      const applied = await migrate(db)
      console.log(JSON.stringify({ applied }))
      return 0
    }
    // A restore applies the migrations itself: first those its backup's data had.
    if (command === 'restore') return (await runBackupCommand(db, command, rest))!
    await migrate(db)
    const handled = (await runProjectCommand(db, config, command, rest)) ?? (await runSubscriberCommand(db, config, command, rest)) ??
      (await runBackupCommand(db, command, rest))
    if (handled === null) {
      console.error(`Unknown command "${[command, ...rest].join(' ')}".\n\n${HELP}`)
      return 2
    }
    return handled
  } finally {
    await db.close()
  }
}

/** Default port of `herald dev push-service`: fixed, so subscriptions stored in Herald stay valid across restarts of it. */
const DEV_PUSH_SERVICE_PORT = 8090

async function runDevCommand(args: string[]): Promise<number> {
  if (args[0] !== 'push-service') {
    console.error(`Unknown command "dev ${args.join(' ')}".\n\n${HELP}`)
    return 2
  }
  const { values } = parseArgs({
    args: args.slice(1),
    options: {
      port: { type: 'string', default: String(DEV_PUSH_SERVICE_PORT) },
      'delay-ms': { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      'public-url': { type: 'string' },
      help: { type: 'boolean' },
    },
  })
  const { devPushServiceUsage, startDevPushService } = await import('./dev/push-service-control.ts')
  if (values.help) {
    console.log(devPushServiceUsage('http://127.0.0.1:<port>', 0))
    return 0
  }
  const port = Number(values.port)
  const delayMs = Number(values['delay-ms'])
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new ConfigError(`--port must be a port number, got "${values.port}"`)
  if (!Number.isInteger(delayMs) || delayMs < 0 || delayMs > 600_000) throw new ConfigError(`--delay-ms must be 0 to 600000, got "${values['delay-ms']}"`)
  const publicUrl = values['public-url']
  if (publicUrl !== undefined) {
    const { publicOrigin } = await import('./dev/push-service.ts')
    try {
      publicOrigin(publicUrl)
    } catch (err) {
      throw new ConfigError(`--public-url: ${(err as Error).message}`)
    }
  }
  const service = await startDevPushService({ port, delayMs, host: values.host, publicUrl })
  console.log(devPushServiceUsage(service.url, delayMs))
  const stop = () => void service.close().then(() => process.exit(0))
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  return -1 // keeps running
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

// The operator CLI: the twin of every /admin/v1 route, printing JSON.
import type { Config } from '../platform/config.ts'
import type { Database } from '../platform/db/database.ts'

export const PROJECT_COMMANDS_HELP = ''

/** Runs a project/keys command; returns the exit code, or null when the command is not one of these. */
export async function runProjectCommand(db: Database, config: Config, command: string, args: string[]): Promise<number | null> {
  void db
  void config
  void command
  void args
  return null
}

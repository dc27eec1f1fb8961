// Runs the `herald` CLI in a child process (node on the tests' build of the
// sources, built-cli.ts, so a timeout's kill reaches the CLI itself), with
// only the given environment: nothing of the test runner's leaks into the
// configuration.
import { execFile } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { builtMain } from './built-cli.ts'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

export interface CliResult {
  /** The exit code; null when the timeout killed it (it was still running). */
  code: number | null
  stdout: string
  stderr: string
}

export function runHerald(args: string[], env: Record<string, string>, timeoutMs = 30_000): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [builtMain(), ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeout: timeoutMs },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : error.killed ? null : typeof error.code === 'number' ? error.code : null
        resolve({ code, stdout, stderr })
      },
    )
  })
}

// Once per embedded test run: the migrated PGlite template each test file
// copies (embedded-template.ts), made here so the files running in parallel
// do not each make it, and what killed runs left behind removed; at the end,
// the copies of files that never dropped their database. Also the compiled
// CLI the files that start `herald` processes run (built-cli.ts).
import { ensureBuild, sweepBuilds } from './built-cli.ts'
import { ensureTemplate, sweepTemplates } from './embedded-template.ts'

export default async function setup(): Promise<() => Promise<void>> {
  sweepTemplates()
  sweepBuilds()
  ensureBuild()
  await ensureTemplate()
  return async () => sweepTemplates()
}

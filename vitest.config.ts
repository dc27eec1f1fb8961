// The suite runs on the embedded database or, when DATABASE_URL is set, on
// that PostgreSQL server instead: same tests, one storage mode per run (CI
// runs both). HERALD_TEST_MODES=embedded,postgres runs both in one go.
// Real-browser tests (*.browser.test.ts) run once, in their own project, on
// the embedded database: what they test is the page and the worker, and
// Chromium is heavy for two cores. So a run on PostgreSQL alone (DATABASE_URL
// set, CI's second `npm test`) leaves them out: they would run the same pages
// on the same embedded database a second time (docs/testing.md). They run in
// any run that includes the embedded mode (`npm test` without DATABASE_URL,
// HERALD_TEST_MODES=embedded,postgres) and when asked for (--project browser).
import os from 'node:os'
import { defineConfig } from 'vitest/config'

const MODES = ['embedded', 'postgres']
const modes = process.env.HERALD_TEST_MODES
  ? process.env.HERALD_TEST_MODES.split(',').map((m) => m.trim()).filter((m) => MODES.includes(m))
  : process.env.DATABASE_URL ? ['postgres'] : ['embedded']
if (modes.includes('postgres') && !process.env.DATABASE_URL) {
  throw new Error('HERALD_TEST_MODES names postgres but DATABASE_URL is not set')
}
const BROWSER_TESTS = '**/*.browser.test.ts'
const browserAsked = process.argv.some((arg, i) => arg === '--project=browser' || (arg === '--project' && process.argv[i + 1] === 'browser'))
const withBrowser = modes.includes('embedded') || browserAsked
// Two test files at a time even on two cores (vitest's default there is one):
// much of a file's time is waiting on sockets, so two overlap well. Measured
// on this 2-core machine, embedded suite with Chromium: 457 s with two,
// against ~800 s of CPU run one after the other (docs/testing.md). More
// cores, more files.
//
// Not isolated (isolate: false): a worker process runs file after file and
// loads the app's modules once, instead of once per file (~1.1 s each,
// 171 s of a 510 s run on a slow machine). Files then share module state, which
// is safe because every file builds its own database, context and app
// (test/support/app.ts), no file mocks a module or writes process.env, the
// files that fake the clock restore it after each test, and no file imports
// another test file or leaves a fixture changed (but OWN_PROCESS_TESTS, below).
// docs/testing.md, "Files share their worker's modules", has the figures.
const MAX_WORKERS = Math.max(2, os.availableParallelism() - 1)
/**
 * Files that need a process of their own: the dry-run twins import other test
 * files to run their tests again (a module already loaded in a shared worker
 * would register nothing) and reroute the sends of the fixtures they share.
 */
const OWN_PROCESS_TESTS = ['src/broadcasts/send.dry-run.twins.test.ts']

const BROWSER_PROJECT = {
  test: {
    name: 'browser',
    include: [`src/${BROWSER_TESTS}`, `test/${BROWSER_TESTS}`],
    env: { HERALD_TEST_DB: 'embedded', NODE_ENV: 'test' },
    globalSetup: ['test/support/global-setup-embedded.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks' as const,
    isolate: false,
    // One browser file at a time. Two at once (two Chromiums beside the other files) ran ~50 s faster
    // on a slow 2-core machine, but a Compose page once waited out its 30 s there (docs/testing.md).
    fileParallelism: false,
    // A group of its own, after the others: vitest runs projects of different parallelism in separate groups.
    sequence: { groupOrder: 1 },
  },
}

export default defineConfig({
  test: {
    maxWorkers: MAX_WORKERS,
    projects: [
      ...modes.flatMap((mode) => {
        const storage = {
          env: { HERALD_TEST_DB: mode, NODE_ENV: 'test' },
          globalSetup: mode === 'postgres' ? ['test/support/global-setup.ts'] : ['test/support/global-setup-embedded.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
          pool: 'forks' as const,
        }
        return [
          { test: { ...storage, name: mode, include: ['src/**/*.test.ts', 'test/**/*.test.ts'], exclude: [BROWSER_TESTS, ...OWN_PROCESS_TESTS, '**/node_modules/**'], isolate: false } },
          { test: { ...storage, name: `${mode} (own process)`, include: OWN_PROCESS_TESTS, isolate: true } },
        ]
      }),
      ...(withBrowser ? [BROWSER_PROJECT] : []),
    ],
  },
})

// The suite runs once on the embedded database and, when DATABASE_URL is set,
// once more on that PostgreSQL server: same tests, both storage modes.
// Real-browser tests (*.browser.test.ts) run once, in their own project, on
// the embedded database: what they test is the page and the worker, and
// Chromium is heavy for two cores.
import { defineConfig } from 'vitest/config'

const modes = process.env.DATABASE_URL ? ['embedded', 'postgres'] : ['embedded']
const BROWSER_TESTS = '**/*.browser.test.ts'

export default defineConfig({
  test: {
    projects: [
      ...modes.map((mode) => ({
        test: {
          name: mode,
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: [BROWSER_TESTS, '**/node_modules/**'],
          env: { HERALD_TEST_DB: mode, NODE_ENV: 'test' },
          globalSetup: mode === 'postgres' ? ['test/support/global-setup.ts'] : [],
          testTimeout: 30_000,
          hookTimeout: 60_000,
          pool: 'forks' as const,
        },
      })),
      {
        test: {
          name: 'browser',
          include: [`src/${BROWSER_TESTS}`, `test/${BROWSER_TESTS}`],
          env: { HERALD_TEST_DB: 'embedded', NODE_ENV: 'test' },
          testTimeout: 60_000,
          hookTimeout: 60_000,
          pool: 'forks' as const,
          fileParallelism: false,
        },
      },
    ],
  },
})

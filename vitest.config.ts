// The suite runs once on the embedded database and, when DATABASE_URL is set,
// once more on that PostgreSQL server: same tests, both storage modes.
import { defineConfig } from 'vitest/config'

const modes = process.env.DATABASE_URL ? ['embedded', 'postgres'] : ['embedded']

export default defineConfig({
  test: {
    projects: modes.map((mode) => ({
      test: {
        name: mode,
        include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
        env: { HERALD_TEST_DB: mode, NODE_ENV: 'test' },
        globalSetup: mode === 'postgres' ? ['test/support/global-setup.ts'] : [],
        testTimeout: 30_000,
        hookTimeout: 60_000,
        pool: 'forks',
      },
    })),
  },
})

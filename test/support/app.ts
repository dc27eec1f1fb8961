// An in-process Herald for integration tests: a fresh database, the real
// HTTP app (requests go through app.inject), and helpers to make projects.
import { buildApp, type BuildAppOptions } from '../../src/app.ts'
import { loadConfig, type Config } from '../../src/platform/config.ts'
import { createContext, type AppContext } from '../../src/platform/context.ts'
import type { App } from '../../src/platform/http/app-type.ts'
import type { LimitOverrides, PlanName } from '../../src/projects/plans.ts'
import { createProject } from '../../src/projects/projects.service.ts'
import { updateProject } from '../../src/projects/projects.store.ts'
import { createWorker, type BackgroundWorker } from '../../src/worker.ts'
import { createTestDatabase, type TestDatabase } from './database.ts'

export const ADMIN_TOKEN = 'test-admin-token-0123456789'

export interface TestProject {
  id: string
  apiKey: string
  apiKeyId: string
  vapidPublic: string
  /** Authorization header for this project's API key. */
  auth: { authorization: string }
}

export interface TestApp {
  app: App
  ctx: AppContext
  database: TestDatabase
  /** The in-process fan-out worker, when started with { worker: true }. */
  delivery: BackgroundWorker | null
  project(options?: { plan?: PlanName; limits?: LimitOverrides; name?: string }): Promise<TestProject>
  close(): Promise<void>
}

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({
    NODE_ENV: 'test',
    HERALD_ADMIN_TOKEN: ADMIN_TOKEN,
    HERALD_ALLOW_PRIVATE_ENDPOINTS: 'true',
    HERALD_PUBLIC_URL: 'http://localhost:3000',
    ...overrides,
  })
}

export interface TestAppOptions {
  /** Run the fan-out worker in this process too, like `herald serve --role all`. */
  worker?: boolean
  /** Passed to buildApp: called for every route as it is registered. */
  onRoute?: BuildAppOptions['onRoute']
}

export async function createTestApp(env: Record<string, string> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const database = await createTestDatabase()
  const ctx = createContext(testConfig(env), database.db)
  const app = await buildApp(ctx, { onRoute: options.onRoute })
  const delivery = options.worker ? createWorker(ctx) : null
  await delivery?.start()
  return {
    app,
    ctx,
    database,
    delivery,
    async project(options = {}) {
      const created = await createProject(database.db, { name: options.name ?? 'Test project', plan: options.plan ?? 'free' })
      if (options.limits) await updateProject(database.db, created.project.id, { limits: options.limits })
      return {
        id: created.project.id,
        apiKey: created.apiKey,
        apiKeyId: created.apiKeyId,
        vapidPublic: created.project.vapid_public,
        auth: { authorization: `Bearer ${created.apiKey}` },
      }
    },
    async close() {
      await app.close()
      await delivery?.stop()
      await ctx.rateLimiter.close()
      await database.drop()
    },
  }
}

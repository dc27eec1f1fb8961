// The push budget functions the send route and the scheduler share.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../../test/support/app.ts'
import { AppError } from '../platform/errors.ts'
import { checkPushBudget, reservePushes } from './push-budget.ts'
import { monthKey, pushesUsed } from '../projects/push-usage.ts'

let t: TestApp
beforeAll(async () => {
  t = await createTestApp()
})
afterAll(async () => {
  await t.close()
})

describe('push budget', () => {
  it('monthKey is the first day of the UTC month', () => {
    expect(monthKey(new Date(Date.UTC(2026, 0, 31, 23, 59, 59)))).toBe('2026-01-01')
    expect(monthKey(new Date(Date.UTC(2026, 11, 1, 0, 0, 0)))).toBe('2026-12-01')
    // 23:30 on 31 Dec in UTC-2 is already January in UTC.
    expect(monthKey(new Date('2026-12-31T23:30:00-02:00'))).toBe('2027-01-01')
  })

  it('reservePushes adds up to the cap and refuses past it, changing nothing', async () => {
    const p = await t.project()
    const at = new Date(Date.UTC(2030, 4, 10))
    await reservePushes(t.ctx.db, p.id, 5, 3, at)
    await reservePushes(t.ctx.db, p.id, 5, 2, at)
    expect(await pushesUsed(t.ctx.db, p.id, at)).toBe(5)
    const refused = await reservePushes(t.ctx.db, p.id, 5, 1, at).catch((err) => err)
    expect(refused).toBeInstanceOf(AppError)
    expect(refused).toMatchObject({ code: 'monthly_push_limit_reached', extra: { limit: 5, audience: 1 } })
    expect(await pushesUsed(t.ctx.db, p.id, at)).toBe(5)
    // Other months are counted apart.
    expect(await pushesUsed(t.ctx.db, p.id, new Date(Date.UTC(2030, 5, 1)))).toBe(0)
  })

  it('concurrent reservations never both fit into the last of the budget', async () => {
    const p = await t.project()
    const at = new Date(Date.UTC(2030, 6, 10))
    const results = await Promise.allSettled(
      [1, 2, 3, 4].map(() => t.ctx.db.transaction((tx) => reservePushes(tx, p.id, 10, 4, at))),
    )
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(2)
    expect(await pushesUsed(t.ctx.db, p.id, at)).toBe(8)
  })

  it('a refused reservation rolls back what its transaction wrote', async () => {
    const p = await t.project()
    const at = new Date(Date.UTC(2030, 7, 10))
    await t.ctx.db
      .transaction(async (tx) => {
        await reservePushes(tx, p.id, 10, 6, at)
        await reservePushes(tx, p.id, 10, 6, at)
      })
      .catch(() => undefined)
    expect(await pushesUsed(t.ctx.db, p.id, at)).toBe(0)
  })

  it('checkPushBudget refuses only a non-empty audience that does not fit', async () => {
    const p = await t.project()
    const at = new Date(Date.UTC(2030, 8, 10))
    await reservePushes(t.ctx.db, p.id, 100, 7, at)
    await expect(checkPushBudget(t.ctx.db, p.id, 10, 3, at)).resolves.toBeUndefined()
    await expect(checkPushBudget(t.ctx.db, p.id, 10, 4, at)).rejects.toMatchObject({ code: 'monthly_push_limit_reached' })
    await expect(checkPushBudget(t.ctx.db, p.id, 5, 0, at)).resolves.toBeUndefined()
  })
})

// POST /v1/subscribers/import (issue 23): a team moving from another provider
// brings its subscriptions as NDJSON, one subscribe body a line. The upload is
// read as a stream, line by line, and written in batches; a bad line is
// skipped and reported without failing the good ones.
import type { FastifyError } from 'fastify'
import type { Config } from '../platform/config.ts'
import type { Database } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { newId } from '../platform/ids.ts'
import { validationIssues } from '../platform/http/errors.ts'
import { unstorableStrings, validatorCompiler } from '../platform/http/validation.ts'
import { checkPushEndpoint } from '../platform/outbound/url-policy.ts'
import type { AuthedProject } from '../projects/project-auth.ts'
import { lockActiveCount } from './subscribers.store.ts'
import type { SubscriberStatus, Tags } from './subscribers.schemas.ts'
import { IMPORT_ERRORS_MAX, ImportLine, type ImportError, type ImportResult } from './import.schemas.ts'
import { readLines } from './import-lines.ts'
import { csvHeader, csvLine } from './import-csv.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'
import { originalVapidKeyId, usableVapidKeyIds } from '../projects/vapid-keys.store.ts'
import { addMemberships, lockExisting, projectGroups, upsertImported, type ImportRow } from './import.store.ts'

/**
 * Lines per transaction: big enough that a million lines take ~1,000 round
 * trips of a few statements, small enough that a batch's arrays (a few MB) and
 * its row locks stay small and a concurrent subscribe waits little.
 */
export const IMPORT_BATCH_SIZE = 1000
/** A subscribe body is at most ~4 KB (2 KB endpoint, keys, 50 tags of 256 characters): 64 KB leaves room and still bounds memory. */
export const IMPORT_LINE_MAX_BYTES = 64 * 1024
/** 2 million lines of ~500 bytes, the size of a large move; past it the upload stops with 413. */
export const IMPORT_BODY_MAX_BYTES = 1024 * 1024 * 1024

interface Prepared {
  line: number
  endpoint: string
  p256dh: string
  auth: string
  /** undefined: keep what is stored (a new row gets null). */
  externalId: string | null | undefined
  tags: Tags | undefined
  groupIds: string[]
  createdAt: Date | null
  status: SubscriberStatus
  /** The pair the line names (vapid_public); null: the current pair for a new row, the stored one for an existing row. */
  vapidKeyId: string | null
}

const validateLine = validatorCompiler({ schema: ImportLine as object, httpPart: 'body' }) as unknown as { (data: unknown): boolean; errors?: unknown[] }

/** Tags compared by content: jsonb does not keep key order. */
function sameTags(a: Tags, b: Tags): boolean {
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && a[key] === b[key])
}

export type ImportFormat = 'ndjson' | 'csv'

export async function importSubscribers(db: Database, config: Config, audit: AuditContext, project: AuthedProject, format: ImportFormat, body: AsyncIterable<Buffer | string>): Promise<ImportResult> {
  const result: ImportResult = { imported: 0, updated: 0, skipped: 0, errors: [] }
  const skip = (line: number, field: string, reason: string): void => {
    result.skipped++
    if (result.errors.length < IMPORT_ERRORS_MAX) result.errors.push({ line, field, reason } satisfies ImportError)
  }
  const groups = await projectGroups(db, project.id)
  const groupById = new Set(groups.map((g) => g.id))
  const groupByName = new Map(groups.map((g) => [g.name, g.id]))
  const cap = project.effectiveLimits.subscribers
  const vapidKeys = await usableVapidKeyIds(db, project.id)

  let batch: Prepared[] = []
  const inBatch = new Set<string>()

  async function flush(): Promise<void> {
    if (batch.length === 0) return
    const items = batch
    batch = []
    inBatch.clear()
    await db.transaction(async (tx) => {
      // Rows first, then the counter: the order subscribe takes its locks in.
      const existing = await lockExisting(tx, project.id, items.map((item) => item.endpoint))
      let room = cap - (await lockActiveCount(tx, project.id))
      const writes: ImportRow[] = []
      const joins: Array<{ endpoint: string; groupIds: string[] }> = []
      let imported = 0
      let updated = 0
      for (const item of items) {
        const old = existing.get(item.endpoint)
        if (item.status === 'active' && (!old || old.status !== 'active')) {
          if (room <= 0) {
            skip(item.line, '(line)', `over the plan's cap of ${cap} active subscribers`)
            continue
          }
          room--
        }
        const externalId = item.externalId === undefined ? (old?.external_id ?? null) : item.externalId
        const tags = item.tags ?? old?.tags ?? {}
        // An existing row keeps its pair unless the line names one; a new row without one takes the current pair.
        const vapidKeyId = item.vapidKeyId ?? (old ? (old.vapid_key_id ?? originalVapidKeyId(project.id)) : null)
        const changed = !old || old.status !== item.status || old.p256dh !== item.p256dh || old.auth !== item.auth || old.external_id !== externalId || !sameTags(old.tags, tags) ||
          (item.vapidKeyId !== null && (old.vapid_key_id ?? originalVapidKeyId(project.id)) !== item.vapidKeyId)
        const newGroups = item.groupIds.filter((id) => !old?.group_ids.includes(id))
        if (changed) writes.push({ id: old?.id ?? newId('sub'), endpoint: item.endpoint, p256dh: item.p256dh, auth: item.auth, external_id: externalId, tags, status: item.status, created_at: item.createdAt, vapid_key_id: vapidKeyId })
        if (newGroups.length > 0) joins.push({ endpoint: item.endpoint, groupIds: newGroups })
        if (!old) imported++
        else if (changed || newGroups.length > 0) updated++
      }
      const ids = await upsertImported(tx, project.id, writes)
      const subscriberIds: string[] = []
      const groupIds: string[] = []
      for (const join of joins) {
        const id = ids.get(join.endpoint) ?? existing.get(join.endpoint)?.id
        if (!id) continue
        for (const groupId of join.groupIds) {
          subscriberIds.push(id)
          groupIds.push(groupId)
        }
      }
      await addMemberships(tx, project.id, subscriberIds, groupIds)
      result.imported += imported
      result.updated += updated
    })
  }

  const tooBig = (total: number): void => {
    if (total > IMPORT_BODY_MAX_BYTES) throw new AppError('payload_too_large', `An import is at most ${IMPORT_BODY_MAX_BYTES} bytes; split the file (importing is idempotent, so the lines already imported can be sent again).`)
  }

  let columns: string[] | null = null
  for await (const line of readLines(body, IMPORT_LINE_MAX_BYTES, tooBig)) {
    if (line.tooLong) {
      skip(line.number, '(line)', `is longer than ${IMPORT_LINE_MAX_BYTES} bytes`)
      continue
    }
    if (line.text.trim() === '') continue
    let value: unknown
    if (format === 'csv') {
      if (columns === null) {
        // The first line names the columns; a header that cannot be read fails the whole upload.
        columns = csvHeader(line.text)
        continue
      }
      const record = csvLine(columns, line.text)
      if ('error' in record) {
        skip(line.number, record.field, record.error)
        continue
      }
      value = record.value
    } else {
      try {
        value = JSON.parse(line.text)
      } catch {
        skip(line.number, '(line)', 'is not valid JSON')
        continue
      }
    }
    // The operator's export starts with the project's VAPID pair: not a subscription.
    if (line.number === 1 && value !== null && typeof value === 'object' && 'herald_export' in value) continue
    const prepared = prepare(line.number, value)
    if (!prepared) continue
    // The same endpoint twice in one batch: the earlier line is written first, so the later one wins, as in file order.
    if (inBatch.has(prepared.endpoint)) await flush()
    batch.push(prepared)
    inBatch.add(prepared.endpoint)
    if (batch.length >= IMPORT_BATCH_SIZE) await flush()
  }
  await flush()
  // One entry for the whole import, with its counts, once every batch is in:
  // an import spans many transactions, so it cannot share one with them all.
  if (result.imported + result.updated > 0) {
    await db.transaction((tx) => recordAudit(tx, { projectId: project.id, context: audit, action: 'subscriber.import', target: { type: 'project', id: project.id }, details: { imported: result.imported, updated: result.updated, skipped: result.skipped } }))
  }
  return result

  /** The line as a row to write, or null after reporting why it is skipped. */
  function prepare(number: number, value: unknown): Prepared | null {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      skip(number, '(line)', 'must be a JSON object')
      return null
    }
    const unstorable = unstorableStrings(value, '')
    if (unstorable.length > 0) {
      skip(number, unstorable[0]!.path.replace(/^\./, '') || '(line)', unstorable[0]!.message)
      return null
    }
    if (!validateLine(value)) {
      const issue = validationIssues({ validation: validateLine.errors } as unknown as FastifyError)[0]!
      skip(number, issue.path === '(body)' ? '(line)' : issue.path, issue.message)
      return null
    }
    const line = value as ImportLine
    const refused = checkPushEndpoint(line.endpoint, config)
    if (refused) {
      skip(number, 'endpoint', refused)
      return null
    }
    const groupIds = new Set<string>()
    for (const id of line.group_ids ?? []) {
      if (!groupById.has(id)) {
        skip(number, 'group_ids', `no group ${id} in this project`)
        return null
      }
      groupIds.add(id)
    }
    for (const name of line.groups ?? []) {
      const id = groupByName.get(name)
      if (!id) {
        skip(number, 'groups', `no group named ${JSON.stringify(name)} in this project`)
        return null
      }
      groupIds.add(id)
    }
    let vapidKeyId: string | null = null
    if (line.vapid_public !== undefined) {
      vapidKeyId = vapidKeys.get(line.vapid_public) ?? null
      if (vapidKeyId === null) {
        skip(number, 'vapid_public', "is not one of this project's VAPID public keys (retired ones are not taken)")
        return null
      }
    }
    return {
      line: number,
      vapidKeyId,
      endpoint: line.endpoint,
      p256dh: line.keys.p256dh,
      auth: line.keys.auth,
      externalId: line.external_id,
      tags: line.tags,
      groupIds: [...groupIds],
      createdAt: line.created_at === undefined ? null : new Date(line.created_at),
      status: line.status ?? 'active',
    }
  }
}

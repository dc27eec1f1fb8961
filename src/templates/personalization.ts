// A notification rendered per subscriber (issue 24): its fields may hold
// variables, and it may have versions by language. Compiled once per
// broadcast (parsed templates, cached by fan-out), rendered per subscriber:
// pick the version for the subscriber's locale, render each field with the
// subscriber's variables, then hold the result to every rule a literal
// notification obeys (lengths, URL rules, one push record). What cannot be
// held to them skips that subscriber, with a cause (docs/templates.md).
import type { Template } from 'liquidjs'
import { AppError, invalidField } from '../platform/errors.ts'
import type {
  DataValue,
  Localized,
  LocalizedVersion,
  MissingPolicy,
  NotificationAction,
  SendData,
  TooLongPolicy,
  VariableDefaults,
} from '../broadcasts/broadcasts.schemas.ts'
import { hasMarkup, MissingValue, parseTemplate, renderTemplate, variablePaths } from './liquid.ts'
import { canonicalLocale, closestLocale } from './locale.ts'

/** How a broadcast is personalized, as stored on it (broadcasts.personalization, migration 0028). */
export interface Personalization {
  template_id: string | null
  data: SendData
  defaults: VariableDefaults
  /** Keys canonical BCP 47 tags. */
  localized: Localized
  missing: MissingPolicy
  on_too_long: TooLongPolicy
}

/** A notification's fields as fan-out sends them. */
export interface NotificationFields {
  title: string
  body: string
  url: string
  icon: string | null
  image: string | null
  actions: NotificationAction[]
}

/** Limits of a rendered field, the same as of a literal one (broadcasts.schemas.ts). */
export const TITLE_MAX = 256
export const BODY_MAX = 2048
export const ACTION_TITLE_MAX = 64
const URL_MAX = 2048
const CLICK_URL = /^(https?:\/\/[^\s/?#]+[^\s]*|\/(?!\/)[^\s]*)$/
const VARIABLE = /^(tags\.[A-Za-z0-9_-]{1,64}|data\.[A-Za-z0-9_-]{1,64}|external_id|locale)$/
const ELLIPSIS = '…'

/** One field: its source, and its parsed template when it holds markup (null: sent as written). */
interface Field {
  path: string
  source: string
  parsed: Template[] | null
}

interface CompiledVersion {
  title: Field
  body: Field
  url: Field
  icon: Field | null
  image: Field | null
  actions: Array<{ action: string; title: Field; url: Field | null }>
  /** Every variable path the version's fields read. */
  paths: string[]
}

export interface CompiledNotification {
  base: CompiledVersion
  versions: Map<string, CompiledVersion>
  keys: string[]
  personalization: Personalization
}

/** Whether a send with these fields and languages must be rendered per subscriber at all. */
export function needsRendering(fields: NotificationFields, localized: Localized): boolean {
  if (Object.keys(localized).length > 0) return true
  const texts = [fields.title, fields.body, fields.url, fields.icon ?? '', fields.image ?? '', ...fields.actions.flatMap((a) => [a.title, a.url ?? ''])]
  return texts.some(hasMarkup)
}

/**
 * The literal scheme and host a URL field starts with, before any markup:
 * a variable may fill a path or a query, never choose where the URL goes.
 */
function checkUrlOutline(path: string, source: string, httpsOnly: boolean): void {
  if (!hasMarkup(source)) return
  // A path stays on the site: a rendered "//host" is refused per subscriber (renderFor).
  if (!httpsOnly && source.startsWith('/')) return
  const outline = /^(https?):\/\/([^/?#{]+)[/?#]/i.exec(source)
  if (!outline || (httpsOnly && outline[1].toLowerCase() !== 'https')) {
    const shape = httpsOnly ? 'https://host/ literally' : 'https://host/ (or http://host/) or a path like /orders/ literally'
    throw new AppError('template_invalid', `${path}: a URL with variables must start with ${shape}; a variable cannot choose its scheme or host.`, { field: path })
  }
}

function compileField(path: string, source: string): Field {
  if (!hasMarkup(source)) return { path, source, parsed: null }
  let parsed: Template[]
  try {
    parsed = parseTemplate(source)
  } catch (err) {
    throw new AppError('template_invalid', `${path}: ${(err as Error).message.split(', line:')[0]}.`, { field: path })
  }
  for (const variable of variablePaths(parsed)) {
    if (variable === null || !VARIABLE.test(variable)) {
      throw new AppError(
        'template_invalid',
        `${path}: ${variable === null ? 'a variable named by another variable' : `"${variable}"`} is not a variable templates know; use tags.<key>, data.<key>, external_id or locale.`,
        { field: path },
      )
    }
  }
  return { path, source, parsed }
}

function compileVersion(prefix: string, fields: Partial<NotificationFields> & { title: string; body: string }, base: CompiledVersion | null): CompiledVersion {
  const field = (name: string, source: string) => compileField(`${prefix}.${name}`, source)
  const url = fields.url !== undefined ? field('url', fields.url) : base?.url ?? field('url', '/')
  if (fields.url !== undefined) checkUrlOutline(`${prefix}.url`, fields.url, false)
  const media = (name: 'icon' | 'image'): Field | null => {
    if (base) return base[name]
    const source = fields[name]
    if (source === undefined || source === null) return null
    if (hasMarkup(source) && /^data:/i.test(source)) throw new AppError('template_invalid', `${prefix}.${name}: a data: URL cannot hold variables.`, { field: `${prefix}.${name}` })
    checkUrlOutline(`${prefix}.${name}`, source, true)
    return field(name, source)
  }
  const actions = fields.actions !== undefined
    ? fields.actions.map((a, i) => {
        if (a.url !== undefined) checkUrlOutline(`${prefix}.actions.${i}.url`, a.url, false)
        return { action: a.action, title: field(`actions.${i}.title`, a.title), url: a.url === undefined ? null : field(`actions.${i}.url`, a.url) }
      })
    : base?.actions ?? []
  const version: CompiledVersion = { title: field('title', fields.title), body: field('body', fields.body), url, icon: media('icon'), image: media('image'), actions, paths: [] }
  const all = [version.title, version.body, version.url, version.icon, version.image, ...version.actions.flatMap((a) => [a.title, a.url])]
  version.paths = [...new Set(all.flatMap((f) => (f?.parsed ? (variablePaths(f.parsed) as string[]) : [])))]
  return version
}

/**
 * The localized versions with canonical keys ("pt-br" → "pt-BR"); a key that
 * is no BCP 47 tag, or two keys naming one language, is a 400 naming it.
 */
export function canonicalLocalized(localized: Localized | undefined, prefix = 'localized'): Localized {
  const out: Localized = {}
  for (const [key, version] of Object.entries(localized ?? {})) {
    const canonical = canonicalLocale(key)
    if (!canonical) throw invalidField(`${prefix}.${key}`, 'is not a BCP 47 language tag (e.g. fr, pt-BR, zh-Hant)')
    if (Object.hasOwn(out, canonical)) throw invalidField(`${prefix}.${key}`, `names the same language as another key (${canonical})`)
    out[canonical] = version
  }
  return out
}

/** Parses every field of every version; throws template_invalid naming the first field the sandbox refuses. */
export function compileNotification(fields: NotificationFields, personalization: Personalization, prefix = 'notification'): CompiledNotification {
  const base = compileVersion(prefix, fields, null)
  const versions = new Map<string, CompiledVersion>()
  for (const [key, version] of Object.entries(personalization.localized)) {
    versions.set(key, compileVersion(`localized.${key}`, version as LocalizedVersion, base))
  }
  return { base, versions, keys: [...versions.keys()], personalization }
}

/** A subscriber's variables (the columns fan-out reads when a broadcast is personalized). */
export interface SubscriberVariables {
  tags: Record<string, DataValue> | null
  external_id: string | null
  locale: string | null
}

function present(value: unknown): boolean {
  return value !== undefined && value !== null && value !== ''
}

/** The scope one render sees: only the variables the version reads, a MissingValue for each without a value. */
function scopeFor(version: CompiledVersion, who: SubscriberVariables, p: Personalization, unresolved: Set<string>): Record<string, unknown> {
  const tags: Record<string, unknown> = {}
  const data: Record<string, unknown> = {}
  const scope: Record<string, unknown> = { tags, data }
  for (const path of version.paths) {
    const missing = () => new MissingValue(path, Object.hasOwn(p.defaults, path) ? p.defaults[path] : undefined, unresolved)
    const dot = path.indexOf('.')
    if (dot < 0) {
      const value = path === 'external_id' ? who.external_id : who.locale
      scope[path] = present(value) ? value : missing()
      continue
    }
    const key = path.slice(dot + 1)
    const source = path.startsWith('tags.') ? who.tags : p.data
    const target = path.startsWith('tags.') ? tags : data
    const value = source && Object.hasOwn(source, key) ? source[key] : undefined
    target[key] = present(value) ? value : missing()
  }
  return scope
}

/** Cut to at most `max` code points, ending in "…". */
function cut(text: string, max: number): string {
  const chars = Array.from(text)
  return chars.length <= max ? text : chars.slice(0, max - 1).join('') + ELLIPSIS
}

export type Rendered = { ok: true; locale: string | null; fields: NotificationFields } | { ok: false; locale: string | null; cause: string }

class Skip extends Error {}

/**
 * The notification one subscriber gets, or why they get none: a variable
 * without a value under missing skip_subscriber or fail, a field over its
 * limit under on_too_long skip, a rendered URL that breaks the URL rules, or a
 * render cut off by the time or output limit.
 */
export function renderFor(compiled: CompiledNotification, who: SubscriberVariables): Rendered {
  const p = compiled.personalization
  const key = closestLocale(who.locale, compiled.keys)
  const version = key === null ? compiled.base : compiled.versions.get(key)!
  const unresolved = new Set<string>()
  const scope = version.paths.length > 0 ? scopeFor(version, who, p, unresolved) : {}
  const text = (field: Field): string => {
    if (!field.parsed) return field.source
    try {
      return renderTemplate(field.parsed, scope)
    } catch (err) {
      throw new Skip(`render_failed: ${field.path}: ${(err as Error).message.split(', line:')[0]}`)
    }
  }
  const limited = (field: Field, max: number): string => {
    const value = text(field)
    if (Array.from(value).length <= max) return value
    if (p.on_too_long === 'skip') throw new Skip(`too_long: ${field.path} is over ${max} characters`)
    return cut(value, max)
  }
  const clickUrl = (field: Field): string => {
    const value = text(field)
    if (!field.parsed) return value
    if (value.length > URL_MAX || !CLICK_URL.test(value) || (!value.startsWith('/') && !URL.canParse(value))) throw new Skip(`invalid_url: ${field.path}`)
    return value
  }
  const mediaUrl = (field: Field | null): string | null => {
    if (!field) return null
    const value = text(field)
    if (!field.parsed) return value
    const host = /^https:\/\/([^/?#{]+)/i.exec(field.source)?.[1]?.toLowerCase()
    if (value.length > URL_MAX || !/^https:\/\//i.test(value) || !URL.canParse(value) || new URL(value).host !== host) throw new Skip(`invalid_url: ${field.path}`)
    return value
  }
  try {
    const fields: NotificationFields = {
      title: limited(version.title, TITLE_MAX),
      body: limited(version.body, BODY_MAX),
      url: clickUrl(version.url),
      icon: mediaUrl(version.icon),
      image: mediaUrl(version.image),
      actions: version.actions.map((a) => {
        const action: NotificationAction = { action: a.action, title: limited(a.title, ACTION_TITLE_MAX) }
        if (a.url) action.url = clickUrl(a.url)
        return action
      }),
    }
    if (p.missing !== 'default' && unresolved.size > 0) return { ok: false, locale: key, cause: `missing_variable: ${[...unresolved].sort().join(', ')}` }
    // An empty title or body after rendering would show a blank notification.
    if (fields.title.trim() === '' || fields.body.trim() === '') return { ok: false, locale: key, cause: `empty: ${fields.title.trim() === '' ? 'title' : 'body'} rendered empty` }
    return { ok: true, locale: key, fields }
  } catch (err) {
    if (err instanceof Skip) return { ok: false, locale: key, cause: err.message }
    throw err
  }
}

/** The data variables every version reads that the send gives no value or default for (missing "fail" refuses the send with them). */
export function missingData(compiled: CompiledNotification): string[] {
  const p = compiled.personalization
  const paths = [compiled.base, ...compiled.versions.values()].flatMap((v) => v.paths)
  return [...new Set(paths)].filter((path) => path.startsWith('data.') && !present(p.data[path.slice(5)]) && !Object.hasOwn(p.defaults, path)).sort()
}

/** Every variable path the notification reads, in any version (dry run coverage). */
export function allVariables(compiled: CompiledNotification): string[] {
  return [...new Set([compiled.base, ...compiled.versions.values()].flatMap((v) => v.paths))].sort()
}

/**
 * Renders every version once with no subscriber variables, so a field that
 * runs over the render limits with the send's own data is refused at send
 * time (400 template_render_failed) rather than skipping everyone.
 */
export function checkRenders(compiled: CompiledNotification): void {
  const nobody: SubscriberVariables = { tags: {}, external_id: null, locale: null }
  for (const version of [compiled.base, ...compiled.versions.values()]) {
    const scope = scopeFor(version, nobody, compiled.personalization, new Set())
    const fields = [version.title, version.body, version.url, version.icon, version.image, ...version.actions.flatMap((a) => [a.title, a.url])]
    for (const field of fields) {
      if (!field?.parsed) continue
      try {
        renderTemplate(field.parsed, scope)
      } catch (err) {
        throw new AppError('template_render_failed', `${field.path}: ${(err as Error).message.split(', line:')[0]}; the render limits are in docs/templates.md.`, { field: field.path })
      }
    }
  }
}

// Languages (issue 24): a subscriber's locale is a canonical BCP 47 tag, and
// a send's localized versions are matched to it by BCP 47 fallback: drop the
// last subtag until a version matches ("zh-Hant-TW" → "zh-Hant" → "zh"),
// case-insensitively, and use the send's default fields when none does. Never
// a guess at English: a subscriber whose language has no version gets the
// default fields, whatever language they are written in.

/** The canonical form of a BCP 47 tag ("pt-br" → "pt-BR"), or null when it is not one. */
export function canonicalLocale(value: string): string | null {
  if (value.length === 0 || value.length > 64) return null
  try {
    const [canonical] = Intl.getCanonicalLocales(value)
    return canonical ?? null
  } catch {
    return null
  }
}

/**
 * The key of `versions` that best matches `locale`, or null for the default
 * fields. Keys are compared lower-cased; extension subtags ("-u-ca-…") are
 * dropped like any other trailing subtag.
 */
export function closestLocale(locale: string | null, versions: readonly string[]): string | null {
  if (!locale || versions.length === 0) return null
  const byLower = new Map(versions.map((key) => [key.toLowerCase(), key]))
  const parts = locale.toLowerCase().split('-')
  for (let n = parts.length; n > 0; n--) {
    // A single-letter subtag starts an extension or private use section: never a match on its own.
    if (parts[n - 1].length === 1) continue
    const found = byLower.get(parts.slice(0, n).join('-'))
    if (found !== undefined) return found
  }
  return null
}

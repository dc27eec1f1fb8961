// Keyset pages of the list routes (decisions.md §1): `limit` rows after the
// cursor, and `next_cursor`, the last row's id when another page follows.

export interface Page<T> {
  rows: T[]
  /** The last row's id when more rows follow, else null (never a cursor to an empty page). */
  next_cursor: string | null
}

/**
 * Reads one page through `read`, which is asked for one row more than
 * `limit`: that row's presence is what tells whether another page follows.
 */
export async function readPage<T extends { id: string }>(limit: number, read: (limitPlusOne: number) => Promise<T[]>): Promise<Page<T>> {
  const rows = await read(limit + 1)
  const page = rows.slice(0, limit)
  return { rows: page, next_cursor: rows.length > limit ? page[page.length - 1].id : null }
}

// Splits a streamed upload into lines without ever holding more than one line
// (up to maxLineBytes) and one chunk in memory: an import of a million
// subscriptions must not need the whole file in RAM. Accepts LF and CRLF line
// ends and drops a UTF-8 byte order mark (spreadsheet exports start with one).
// A line longer than maxLineBytes is not kept: it comes out as { tooLong: true }
// and its bytes are discarded as they arrive.

export type ImportedLine = { number: number; text: string; tooLong: false } | { number: number; text: null; tooLong: true }

const LF = 0x0a
const BOM = Buffer.from([0xef, 0xbb, 0xbf])

export async function* readLines(input: AsyncIterable<Buffer | string>, maxLineBytes: number, onBytes?: (total: number) => void): AsyncGenerator<ImportedLine> {
  let parts: Buffer[] = []
  let size = 0
  let tooLong = false
  let number = 0
  let total = 0

  function finish(): ImportedLine {
    number++
    if (tooLong) {
      parts = []
      size = 0
      tooLong = false
      return { number, text: null, tooLong: true }
    }
    let line = parts.length === 1 ? parts[0]! : Buffer.concat(parts, size)
    parts = []
    size = 0
    if (number === 1 && line.subarray(0, 3).equals(BOM)) line = line.subarray(3)
    let text = line.toString('utf8')
    if (text.endsWith('\r')) text = text.slice(0, -1)
    return { number, text, tooLong: false }
  }

  function keep(piece: Buffer): void {
    if (tooLong) return
    if (size + piece.length > maxLineBytes) {
      tooLong = true
      parts = []
      size = 0
      return
    }
    parts.push(piece)
    size += piece.length
  }

  for await (const raw of input) {
    const chunk = typeof raw === 'string' ? Buffer.from(raw) : raw
    total += chunk.length
    onBytes?.(total)
    let start = 0
    for (let at = chunk.indexOf(LF, start); at !== -1; at = chunk.indexOf(LF, start)) {
      // Copy: the stream may reuse its chunk buffers.
      keep(Buffer.from(chunk.subarray(start, at)))
      yield finish()
      start = at + 1
    }
    if (start < chunk.length) keep(Buffer.from(chunk.subarray(start)))
  }
  // A last line without a line end.
  if (size > 0 || tooLong) yield finish()
}

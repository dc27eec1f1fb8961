// The import's progress bar (issue 23): drawn on a terminal with bytes, lines
// and lines/s; on anything else not a character, and the bytes pass through
// unchanged either way.
import { describe, expect, it } from 'vitest'
import { withProgress, type ProgressTarget } from './import-progress.ts'

function target(isTTY: boolean): ProgressTarget & { text: string; columns: number } {
  return { isTTY, columns: 120, text: '', write(chunk: string) { this.text += chunk; return true } }
}

async function* chunks(parts: string[]): AsyncGenerator<Buffer> {
  for (const part of parts) yield Buffer.from(part)
}

async function drain(input: AsyncIterable<Buffer>): Promise<string> {
  let all = ''
  for await (const chunk of input) all += chunk.toString()
  return all
}

// Three lines in chunks that cut them apart, about 2 MB in all.
const line = `${JSON.stringify({ endpoint: 'https://fcm.googleapis.com/fcm/send/x', pad: 'p'.repeat(700_000) })}\n`
const parts = [line.slice(0, 1000), line.slice(1000) + line, line]
const size = Buffer.byteLength(line) * 3

describe('withProgress', () => {
  it('on a terminal: a bar with the file read, the lines and lines/s, ending at 100%', async () => {
    const tty = target(true)
    let clock = 0
    // Two seconds for the whole file: 3 lines in 2 s.
    const passed = await drain(withProgress(chunks(parts), size, tty, () => (clock += 500)))
    expect(passed).toBe(parts.join(''))
    expect(tty.text).toContain('100%')
    expect(tty.text).toContain(`${(size / 1024 / 1024).toFixed(1)}/${(size / 1024 / 1024).toFixed(1)} MB`)
    expect(tty.text).toMatch(/\| 3 lines \| \d+ lines\/s/)
  })

  it('not a terminal: nothing written, the same bytes', async () => {
    const pipe = target(false)
    expect(await drain(withProgress(chunks(parts), size, pipe))).toBe(parts.join(''))
    expect(pipe.text).toBe('')
  })
})

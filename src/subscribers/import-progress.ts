// The progress bar of `herald subscribers import` (issue 23): on a terminal,
// bytes read of the file's size, lines so far and lines per second, on stderr
// (stdout keeps the JSON answer, so `> result.json` still works). When stderr
// is not a terminal (a pipe, a log, CI) nothing is drawn: the chunks pass
// through untouched and the output stays plain.
import { SingleBar } from 'cli-progress'

const LF = 0x0a
/** Redraws at most this often; a million-line file arrives in tens of thousands of chunks. */
const FPS = 5
const MB = 1024 * 1024

export interface ProgressTarget {
  isTTY?: boolean
  write(text: string): unknown
}

function lineEnds(chunk: Buffer): number {
  let count = 0
  for (let at = chunk.indexOf(LF); at !== -1; at = chunk.indexOf(LF, at + 1)) count++
  return count
}

/** `input` as it is, counting bytes and lines into a bar on `target` when it is a terminal. */
export async function* withProgress(input: AsyncIterable<Buffer>, totalBytes: number, target: ProgressTarget, now: () => number = Date.now): AsyncGenerator<Buffer> {
  if (!target.isTTY) {
    yield* input
    return
  }
  const bar = new SingleBar({
    stream: target as NodeJS.WritableStream,
    fps: FPS,
    hideCursor: true,
    format: 'importing |{bar}| {percentage}% {read}/{size} MB | {lines} lines | {rate} lines/s | ETA {eta_formatted}',
    barsize: 30,
  })
  const started = now()
  let read = 0
  let lines = 0
  const payload = () => {
    const seconds = Math.max((now() - started) / 1000, 0.001)
    return { read: (read / MB).toFixed(1), size: (totalBytes / MB).toFixed(1), lines, rate: Math.round(lines / seconds) }
  }
  bar.start(Math.max(totalBytes, 1), 0, payload())
  try {
    for await (const chunk of input) {
      read += chunk.length
      lines += lineEnds(chunk)
      bar.update(read, payload())
      yield chunk
    }
    bar.update(Math.max(totalBytes, read, 1), payload())
  } finally {
    bar.stop()
  }
}

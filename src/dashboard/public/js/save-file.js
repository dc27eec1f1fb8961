// Saves an export (GET of a file) under a name: fetched with the tab's
// session or key (a plain link could not carry a key), then handed to the
// browser's download through an object URL.
import { download } from './api.js'
import { h } from './dom.js'

export async function saveFile(path, name) {
  const blob = await download(path)
  const link = h('a', { href: URL.createObjectURL(blob), download: name })
  document.body.append(link)
  link.click()
  link.remove()
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000)
}

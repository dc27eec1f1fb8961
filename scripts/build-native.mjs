// `npm install` runs this (package.json "install"): builds the OpenSSL addon
// for RFC 8291 encryption (src/delivery/native) in place, with the node-gyp
// npm ships. It is optional: without a compiler, headers or node-gyp, or if
// the result does not reproduce RFC 8291's test vector, it prints one line,
// leaves no addon behind and exits 0, and Herald encrypts with node:crypto.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const dir = path.join(root, 'src/delivery/native')
const addon = path.join(dir, 'build/Release/rfc8291.node')
const FALLBACK = 'push encryption will use node:crypto (works the same, ~50 µs more CPU per push)'

// RFC 8291 Appendix A, with its fixed salt and sender key pair.
function checkVector() {
  const b = (s) => Buffer.from(s, 'base64url')
  const body = createRequire(import.meta.url)(addon).encrypt(
    Buffer.from('When I grow up, I want to be a watermelon'),
    b('BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4'),
    b('BTBZMqHH6r4Tts7J_aSIgg'),
    b('DGv6ra1nlYgDCS1FRnbzlw'),
    b('yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw'),
    b('BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8'),
  )
  const expected = Buffer.concat([
    b('DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8'),
    b('8pfeW0KbunFT06SuDKoJH9Ql87S1QUrdirN6GcG7sFz1y1sqLgVi1VhjVkHsUoEsbI_0LpXMuGvnzQ'),
  ])
  process.exit(body?.equals(expected) ? 0 : 1)
}

function nodeGyp() {
  // npm sets npm_config_node_gyp for install scripts; run by hand, look beside this node.
  const candidates = [
    process.env.npm_config_node_gyp,
    path.join(path.dirname(process.execPath), '../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js'),
  ]
  return candidates.find((file) => file && fs.existsSync(file))
}

function build() {
  const gyp = nodeGyp()
  if (!gyp) return `no node-gyp found; ${FALLBACK}`
  // Headers installed beside this node (Debian, nodesource, nvm, the official
  // tarballs) need no download; otherwise node-gyp fetches them itself.
  const prefix = path.resolve(path.dirname(process.execPath), '..')
  const args = [gyp, 'rebuild']
  if (fs.existsSync(path.join(prefix, 'include/node/node_api.h'))) args.push(`--nodedir=${prefix}`)
  const made = spawnSync(process.execPath, args, { cwd: dir, encoding: 'utf8', timeout: 120_000 })
  if (made.status !== 0) {
    fs.rmSync(path.join(dir, 'build'), { recursive: true, force: true })
    const lines = `${made.stderr ?? ''}${made.error?.message ?? ''}`.split('\n')
    // node-gyp's own reason ("Could not find any Python", "not found: make") before make's.
    const why = lines.find((line) => /stack Error: /.test(line))?.replace(/.*stack Error: /, '') ?? lines.find((line) => /error/i.test(line))
    return `the OpenSSL addon did not build (${(why ?? 'node-gyp failed').trim().slice(0, 120)}); ${FALLBACK}`
  }
  // Loaded in a child process, so that even a crash cannot fail the install.
  const checked = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--check'], { encoding: 'utf8', timeout: 30_000 })
  if (checked.status !== 0) {
    fs.rmSync(path.join(dir, 'build'), { recursive: true, force: true })
    return `the OpenSSL addon built but did not reproduce RFC 8291's test vector; ${FALLBACK}`
  }
  // An installed package runs dist/ (bin/herald.js), whose encryption loads the addon from beside itself.
  const built = path.join(root, 'dist/src/delivery')
  if (fs.existsSync(built)) fs.cpSync(addon, path.join(built, 'native/build/Release/rfc8291.node'))
  return 'built the OpenSSL addon for push encryption (src/delivery/native)'
}

if (process.argv[2] === '--check') checkVector()
else {
  let line
  try {
    line = build()
  } catch (error) {
    line = `the OpenSSL addon did not build (${error.message}); ${FALLBACK}`
  }
  console.log(`herald: ${line}`)
  process.exitCode = 0
}

// The oldest Node.js Herald runs on, checked before anything else loads
// (src/main.ts imports this first), so an older Node stops with one line that
// names the floor instead of an ERR_REQUIRE_ESM or a syntax error deep in a
// dependency. Why 20.19.0 (undici wants 20.18.1, the test toolchain 20.19.0,
// and 20.19 is the first 20.x that loads an ES module through require()):
// docs/dependencies.md "Node.js floor". package.json `engines` says the same;
// node-floor.test.ts keeps the two in step.
export const NODE_FLOOR = '20.19.0'

function parts(version: string): number[] {
  return version.replace(/^v/, '').split('.').map((n) => Number.parseInt(n, 10) || 0)
}

/** The message to stop with when `version` (process.versions.node) is older than the floor, else null. */
export function nodeTooOld(version: string): string | null {
  const have = parts(version)
  const need = parts(NODE_FLOOR)
  for (let i = 0; i < need.length; i++) {
    if ((have[i] ?? 0) > need[i]) return null
    if ((have[i] ?? 0) < need[i]) return `Herald needs Node.js ${NODE_FLOOR} or newer; this is Node.js ${version}. See README.md "Run it".`
  }
  return null
}

const tooOld = nodeTooOld(process.versions.node)
if (tooOld) {
  console.error(tooOld)
  process.exit(1)
}

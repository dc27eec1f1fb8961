// The local push service lives in src/dev/push-service.ts (it is also the
// `herald dev push-service` command); tests import it from here.
export * from '../../src/dev/push-service.ts'

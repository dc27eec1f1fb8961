import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { AppError } from '../errors.ts'
import { unstorableStrings } from './validation.ts'

describe('unstorableStrings', () => {
  it('finds NUL and lone surrogates in values and property names, at any depth, naming the path', () => {
    const body = {
      ok: 'plain 🙂 text',
      name: 'a\u0000b',
      notification: { title: '\u00e9\udc00', tags: ['fine', 'x\ud800'] },
      ['k\u0000']: 'the value is not looked at',
    }
    const issues = unstorableStrings(body, 'body')
    expect(issues).toHaveLength(4)
    expect(issues).toEqual(expect.arrayContaining([
      { path: 'name', message: expect.stringMatching(/NUL/) },
      { path: 'notification.title', message: expect.stringMatching(/surrogate/) },
      { path: 'notification.tags.1', message: expect.stringMatching(/surrogate/) },
      { path: '(body)', message: expect.stringMatching(/^has a property name that .*NUL/) },
    ]))
  })

  it('prefixes the part of the request that is not the body', () => {
    expect(unstorableStrings({ project: 'prj_\u0000' }, 'querystring')).toEqual([{ path: 'querystring.project', message: expect.any(String) }])
    expect(unstorableStrings('\udfff', 'body')).toEqual([{ path: '(body)', message: expect.any(String) }])
  })

  it('accepts what PostgreSQL stores: surrogate pairs, other control characters, non-strings', () => {
    expect(unstorableStrings({ a: '🙂\u0001\u007f\uffff', b: [1, null, true], c: { d: '' } }, 'body')).toEqual([])
    expect(unstorableStrings(undefined, 'body')).toEqual([])
  })

  it('walks a very deep body without exhausting the stack', () => {
    let deep: unknown = 'x\u0000'
    for (let i = 0; i < 100_000; i++) deep = [deep]
    const issues = unstorableStrings(deep, 'body')
    expect(issues).toHaveLength(1)
    expect(issues[0].path.split('.')).toHaveLength(100_000)
  })

  it('does not walk a streamed body (the import route), only parsed data', () => {
    // Cyclic, like an IncomingMessage (its socket points back at it): walked, it never ended.
    const stream = Readable.from(['{"endpoint":"\u0000"}\n'])
    Object.assign(stream, { self: stream, socket: { owner: stream } })
    expect(unstorableStrings(stream, 'body')).toEqual([])
    expect(unstorableStrings(Object.assign(Object.create(null), { q: 'a\u0000' }), 'querystring')).toHaveLength(1)
  })

  it('stops at ten issues', () => {
    expect(unstorableStrings(Array.from({ length: 50 }, () => '\u0000'), 'body')).toHaveLength(10)
  })
})

describe('AppError', () => {
  it('gives every invalid_request issues, even when thrown without them', () => {
    expect(new AppError('invalid_request', 'No.').toBody()).toEqual({ error: { code: 'invalid_request', message: 'No.', issues: [{ path: '(request)', message: 'No.' }] } })
    expect(new AppError('invalid_request', 'No.', { issues: [] }).toBody().error.issues).toHaveLength(1)
    const named = [{ path: 'name', message: 'is taken' }]
    expect(new AppError('invalid_request', 'No.', { issues: named }).toBody().error.issues).toBe(named)
    expect(new AppError('not_found').toBody().error).not.toHaveProperty('issues')
  })
})

// Request validation: bodies are checked strictly (a number sent as a string
// is an error, as a customer coding against api.md expects), while query
// strings and path parameters are coerced, since they only ever arrive as text.
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifySchema } from 'fastify'

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    // oneOf + discriminator (e.g. send's target): errors name the branch the tag picks.
    discriminator: true,
    strict: false,
  })
  ;(addFormats as unknown as (a: Ajv) => void)(ajv)
  return ajv
}

const bodyAjv = makeAjv(false)
const textAjv = makeAjv(true)

export function validatorCompiler({ schema, httpPart }: { schema: FastifySchema; httpPart?: string }) {
  const ajv = httpPart === 'body' ? bodyAjv : textAjv
  return ajv.compile(schema as object)
}

// Response schemas every domain's routes share, declared once.
import { Type } from 'typebox'

/**
 * The error body of decisions.md §1, for the error statuses in route response
 * schemas: they put each route's failures in the OpenAPI document. Extra fields
 * (issues, limit, audience, request_id) pass through the serializer.
 */
export const ErrorBody = Type.Object({
  error: Type.Object({ code: Type.String(), message: Type.String() }, { additionalProperties: true }),
})

/** `{ "ok": true }`: the answer of a change that has nothing else to say. */
export const Ok = Type.Object({ ok: Type.Literal(true) })

// The error body of decisions.md §1, for the error statuses in route response
// schemas: they put each route's failures in the OpenAPI document. Extra fields
// (issues, limit, audience, request_id) pass through the serializer.
import { Type } from 'typebox'

export const ErrorBody = Type.Object({
  error: Type.Object({ code: Type.String(), message: Type.String() }, { additionalProperties: true }),
})

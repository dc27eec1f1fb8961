// Fastify's own lines about each request, made quiet: nothing when a request
// comes in, and one line when it is answered at debug level (at info, a
// person running `npm start` would read nothing else). Errors keep their level.
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'

export class RequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) {
      reply.log.error({ err: error, status: reply.statusCode }, 'request errored')
      return
    }
    // The path without its query string: nothing a client put after '?' reaches the log.
    const path = request.url.split('?', 1)[0]
    reply.log.debug(
      { method: request.method, route: request.routeOptions.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      `${request.method} ${path} ${reply.statusCode}`,
    )
  }

  override routeNotFound(): void {}
}

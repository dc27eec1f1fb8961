declare module 'parse-prometheus-text-format' {
  /** The families of a Prometheus text exposition, each with its samples. */
  export default function parsePrometheusTextFormat(text: string): unknown[]
}

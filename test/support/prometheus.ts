// Reads a /metrics answer with a real parser of the Prometheus text format
// (parse-prometheus-text-format), and looks samples up by name and labels.
import parsePrometheusTextFormat from 'parse-prometheus-text-format'

export interface Family {
  name: string
  help: string
  type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED'
  metrics: Array<{ value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; count?: string; sum?: string }>
}

export class Scrape {
  readonly families: Map<string, Family>
  /**
   * Every series on its own, histograms' `_bucket`, `_count` and `_sum` too:
   * the parser folds a histogram's samples into one whatever their labels
   * (it drops push_service from herald_push_duration_seconds), so the text is
   * parsed a second time without the histogram TYPE lines.
   */
  private readonly series: Map<string, Family>

  constructor(text: string) {
    // Untyped, a histogram's series alternate (_bucket, _sum, _count for each label set): same-named families are merged.
    const byName = (families: unknown[]) => {
      const map = new Map<string, Family>()
      for (const family of families as Family[]) {
        const seen = map.get(family.name)
        if (seen) seen.metrics.push(...family.metrics)
        else map.set(family.name, family)
      }
      return map
    }
    this.families = byName(parsePrometheusTextFormat(text))
    this.series = byName(parsePrometheusTextFormat(text.replace(/^# TYPE \S+ (histogram|summary)\n/gm, '')))
  }

  family(name: string): Family | undefined {
    return this.families.get(name)
  }

  /** The sum of the samples of `name` whose labels include `labels` (a histogram's: of `${name}_count`). 0 when none. */
  value(name: string, labels: Record<string, string> = {}): number {
    const series = this.families.get(name)?.type === 'HISTOGRAM' ? `${name}_count` : name
    return this.samples(series)
      .filter((m) => Object.entries(labels).every(([k, v]) => (m.labels ?? {})[k] === v))
      .reduce((sum, m) => sum + Number(m.value ?? 0), 0)
  }

  /** Every label set of `name`'s samples. */
  labels(name: string): Array<Record<string, string>> {
    return this.samples(name).map((m) => m.labels ?? {})
  }

  /** The samples of one series (`name`, or a histogram's `name_bucket`, `name_count`, `name_sum`). */
  samples(name: string): Family['metrics'] {
    return this.series.get(name)?.metrics ?? []
  }
}

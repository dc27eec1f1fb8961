// What `herald backup` writes (issue 23): the tables a project needs, in the
// order a restore inserts them (a row's foreign keys point at rows of the
// tables before it), and the tables it leaves out, each with why. Every table
// of the schema is in exactly one of the two lists (backup.test.ts checks it),
// so a migration that adds a table must decide here whether a backup holds it.
//
// Each table's rows are selected whole (to_jsonb of the row), so a column a
// migration adds is in the next backup without a change here; a restore inserts
// the columns the file names (backup.ts and restore.ts).

export interface BackupTable {
  name: string
  /** Primary key columns with their SQL types: rows are read in this order, a page after the last key. */
  key: Array<[column: string, type: string]>
  /** The rows of the projects in $1 (text[]), as a condition on the row `t`. */
  ofProjects: string
  /** The rows of a backup of every project; default: every row. */
  ofAll?: string
}

/** A hosted file (media/) is named {cdn_url}/icons/<sha256>.<ext> wherever a project uses it. */
const USES_MEDIA = (column: string) => `${column} LIKE '%/icons/' || t.sha256 || '.%'`

export const BACKUP_TABLES: BackupTable[] = [
  { name: 'projects', key: [['id', 'text']], ofProjects: 't.id = ANY($1)' },
  // Every VAPID pair a project has had that is not retired or is (issue 23): each subscription is signed with its own.
  { name: 'vapid_keys', key: [['id', 'text']], ofProjects: 't.project_id = ANY($1)' },
  {
    // People: the members of the projects, and whoever invited someone to them (an invite names its inviter).
    name: 'users',
    key: [['id', 'text']],
    ofProjects: `t.id IN (SELECT user_id FROM memberships WHERE project_id = ANY($1)
                 UNION SELECT invited_by FROM invites WHERE project_id = ANY($1))`,
  },
  { name: 'memberships', key: [['project_id', 'text'], ['user_id', 'text']], ofProjects: 't.project_id = ANY($1)' },
  { name: 'invites', key: [['id', 'text']], ofProjects: 't.project_id = ANY($1)' },
  { name: 'api_keys', key: [['id', 'text']], ofProjects: 't.project_id = ANY($1)' },
  { name: 'groups', key: [['id', 'text']], ofProjects: 't.project_id = ANY($1)' },
  { name: 'templates', key: [['id', 'text']], ofProjects: 't.project_id = ANY($1)' },
  { name: 'subscribers', key: [['id', 'text']], ofProjects: 't.project_id = ANY($1)' },
  // Members' test devices (issue 25): which subscriptions (status test) are whose, restored with the members and subscribers they link.
  { name: 'member_test_devices', key: [['subscriber_id', 'text']], ofProjects: 't.project_id = ANY($1)' },
  {
    // Last delivered and clicked, failures in a row (issue 23): what the expiry rules read.
    name: 'subscriber_health',
    key: [['subscriber_id', 'text']],
    ofProjects: 't.subscriber_id IN (SELECT id FROM subscribers WHERE project_id = ANY($1))',
  },
  // The pushes counted toward frequency caps (issue 24): without them a restored project's caps would start from zero.
  { name: 'push_counts', key: [['subscriber_id', 'text']], ofProjects: 't.project_id = ANY($1)' },
  {
    name: 'group_members',
    key: [['group_id', 'text'], ['subscriber_id', 'text']],
    ofProjects: 't.group_id IN (SELECT id FROM groups WHERE project_id = ANY($1))',
  },
  { name: 'webhooks', key: [['id', 'text']], ofProjects: 't.project_id = ANY($1)' },
  { name: 'broadcasts', key: [['id', 'text']], ofProjects: 't.project_id = ANY($1)' },
  // The numbers over time (issue 25, docs/stats.md): derived from events a backup leaves out, so kept as they are.
  { name: 'stats_hourly', key: [['project_id', 'text'], ['hour', 'timestamptz']], ofProjects: 't.project_id = ANY($1)' },
  // A/B tests (issue 25): the variants' content, counts and decision stay with their broadcast.
  { name: 'broadcast_experiments', key: [['broadcast_id', 'text']], ofProjects: 't.project_id = ANY($1)' },
  {
    name: 'broadcast_variants',
    key: [['broadcast_id', 'text'], ['key', 'text']],
    ofProjects: 't.broadcast_id IN (SELECT broadcast_id FROM broadcast_experiments WHERE project_id = ANY($1))',
  },
  { name: 'push_usage', key: [['project_id', 'text'], ['month', 'date']], ofProjects: 't.project_id = ANY($1)' },
  { name: 'audit_log', key: [['id', 'text']], ofProjects: 't.project_id = ANY($1)' },
  {
    // Hosted icons and images are shared by content; a project's backup holds those it uses.
    name: 'media',
    key: [['sha256', 'text']],
    ofProjects: `EXISTS (SELECT 1 FROM broadcasts b WHERE b.project_id = ANY($1) AND (${USES_MEDIA('b.icon')} OR ${USES_MEDIA('b.image')}))
              OR EXISTS (SELECT 1 FROM projects p WHERE p.id = ANY($1) AND ${USES_MEDIA('p.default_icon')})`,
  },
]

/** The tables a backup leaves out, and why (docs/backup.md says the same to operators). */
export const NOT_BACKED_UP: Record<string, string> = {
  schema_migrations: 'the restore runs the migrations itself; the file records which ones its data had',
  project_counters: "recomputed from the subscribers as they are restored (triggers), and checked at the end",
  sessions: 'sign-ins are not carried over: everyone signs in again on the restored Herald',
  password_resets: 'reset links are short-lived; ask for a new one',
  jobs: 'work in flight belongs to the processes of the old database; restore re-plans what must still happen (scheduled broadcasts)',
  idempotency_keys: 'answers kept 24 hours for retried requests in flight, which do not outlive a move',
  events: "one row per push and click: the broadcasts' counts are kept, the per-push log (the largest table) is not",
  webhook_deliveries: 'deliveries waiting to be sent are work in flight, like jobs',
  webhook_attempts: 'the delivery log of the last days, for debugging',
  broadcast_waves: "the local-time waves of broadcasts in flight (issue 24): a restore ends those broadcasts, as it has no jobs to run them",
}

//! Which tables a backup carries, their columns and kinds, and which tables it leaves out and
//! why. One list: the export, the import, the manifest and the restore's verification all read
//! it, and a test derives it from both engines' migrations in both directions.

/// How a column's values are typed in a dump (JSON string, integer or number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnKind {
    /// `TEXT`.
    Text,
    /// `INTEGER` (SQLite) / `BIGINT` (Postgres).
    Integer,
    /// `REAL` (SQLite) / `DOUBLE PRECISION` (Postgres).
    Real,
}

/// One exported column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnSpec {
    /// Column name.
    pub name: &'static str,
    /// Its kind.
    pub kind: ColumnKind,
}

/// One exported table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableSpec {
    /// Table name.
    pub name: &'static str,
    /// Every stored column (generated columns are not stored and not listed).
    pub columns: &'static [ColumnSpec],
    /// The primary key: rows are exported in this order.
    pub key: &'static [&'static str],
    /// The auto-numbered id column, whose counter a restore moves past the imported rows.
    pub identity: Option<&'static str>,
}

impl TableSpec {
    /// The column names, in order.
    pub fn column_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.columns.iter().map(|c| c.name)
    }
}

const fn t(name: &'static str) -> ColumnSpec {
    ColumnSpec {
        name,
        kind: ColumnKind::Text,
    }
}
const fn i(name: &'static str) -> ColumnSpec {
    ColumnSpec {
        name,
        kind: ColumnKind::Integer,
    }
}
const fn r(name: &'static str) -> ColumnSpec {
    ColumnSpec {
        name,
        kind: ColumnKind::Real,
    }
}

/// `documents`: first in every dump, so a restore's full-text index rebuilds as rows arrive.
pub const DOCUMENTS: TableSpec = TableSpec {
    name: "documents",
    columns: &[
        i("id"),
        t("namespace"),
        t("path"),
        t("title"),
        t("body"),
        t("type"),
        t("status"),
        t("tags"),
        t("frontmatter"),
        t("publish_at"),
        t("created_at"),
        t("updated_at"),
    ],
    key: &["id"],
    identity: Some("id"),
};

/// `document_versions`: what the retention prunes after 90 days.
pub const DOCUMENT_VERSIONS: TableSpec = TableSpec {
    name: "document_versions",
    columns: &[
        i("id"),
        i("document_id"),
        t("namespace"),
        t("path"),
        t("title"),
        t("body"),
        t("type"),
        t("status"),
        t("tags"),
        t("snapshot_at"),
    ],
    key: &["id"],
    identity: Some("id"),
};

/// `audit_log`: what the retention prunes after 180 days.
pub const AUDIT_LOG: TableSpec = TableSpec {
    name: "audit_log",
    columns: &[
        i("id"),
        t("actor"),
        t("action"),
        t("namespace"),
        t("path"),
        t("params"),
        t("at"),
    ],
    key: &["id"],
    identity: Some("id"),
};

/// The settings table as the sidecar `_kv.json` carries it (allowlisted keys only).
pub const SETTINGS: TableSpec = TableSpec {
    name: "settings",
    columns: &[t("key"), t("value"), t("expires_at")],
    key: &["key"],
    identity: None,
};

/// Tables a later migration added, with the migration's number: a dump from a build before
/// that migration has no such table, and restores with it empty.
pub const ADDED_LATER: [(&str, u32); 2] = [("job_calls", 23), ("job_doors", 24)];

/// Whether a dump of schema `dump_schema` predates `table` (a dump naming no schema predates
/// every table added later).
pub fn predates(table: &str, dump_schema: Option<&str>) -> bool {
    let Some(&(_, added)) = ADDED_LATER.iter().find(|(t, _)| *t == table) else {
        return false;
    };
    match dump_schema {
        None => true,
        Some(v) => super::manifest::schema_number(v).is_some_and(|n| n < added),
    }
}

/// Every table a dump carries, documents first: the reference's seventeen.
pub const EXPORTED: [TableSpec; 24] = [
    DOCUMENTS,
    TableSpec {
        name: "namespaces",
        columns: &[
            t("namespace"),
            t("repos"),
            t("created_at"),
            t("runner"),
            r("monthly_budget_usd"),
        ],
        key: &["namespace"],
        identity: None,
    },
    DOCUMENT_VERSIONS,
    AUDIT_LOG,
    TableSpec {
        name: "document_links",
        columns: &[
            i("id"),
            t("from_ns"),
            t("from_path"),
            t("type"),
            t("to_ns"),
            t("to_path"),
            t("created_at"),
        ],
        key: &["id"],
        identity: Some("id"),
    },
    TableSpec {
        name: "improve_scores",
        columns: &[
            i("id"),
            t("namespace"),
            t("metric"),
            r("value"),
            t("run_id"),
            t("attempt_id"),
            t("ts"),
        ],
        key: &["id"],
        identity: Some("id"),
    },
    TableSpec {
        name: "improve_attempts",
        columns: &[
            t("id"),
            t("namespace"),
            t("run_id"),
            t("change_summary"),
            t("diff_ref"),
            r("score_before"),
            r("score_after"),
            i("kept"),
            t("reason"),
            t("lineage_parent"),
            t("status"),
            t("branch"),
            t("head_sha"),
            t("base_sha"),
            i("flagged"),
            t("flag_reason"),
            t("skill_id"),
            t("anchors_json"),
            t("secondary_json"),
            t("dispatched_at"),
            t("ts"),
        ],
        key: &["id"],
        identity: None,
    },
    TableSpec {
        name: "improve_runs",
        columns: &[
            t("id"),
            t("namespace"),
            t("mode"),
            t("started"),
            t("finished"),
            i("attempts"),
            i("kept"),
            i("reverts"),
            r("cost_usd"),
            r("ci_minutes"),
            t("status"),
            i("consecutive_reverts"),
            t("current_attempt"),
            t("base_sha"),
            t("pr_url"),
            t("note"),
            t("condition"),
            t("advanced_at"),
        ],
        key: &["id"],
        identity: None,
    },
    TableSpec {
        name: "improve_skills",
        columns: &[
            t("id"),
            t("source_namespace"),
            t("title"),
            t("body_ref"),
            i("wins"),
            i("losses"),
            t("source_attempt"),
            t("ts"),
            i("version"),
            t("status"),
            t("retired_at"),
            t("trigger_condition"),
            t("namespaces"),
            t("termination_test"),
            t("composition_interface"),
            t("source_job"),
        ],
        key: &["id"],
        identity: None,
    },
    TableSpec {
        name: "improve_jti",
        columns: &[t("scope"), t("jti"), t("seen_at")],
        key: &["scope", "jti"],
        identity: None,
    },
    TableSpec {
        name: "jobs",
        columns: &[
            t("id"),
            t("namespace"),
            t("title"),
            t("body"),
            i("priority"),
            t("status"),
            t("posted_by"),
            t("claimed_by"),
            t("claimed_at"),
            t("lease_expires"),
            t("result_ref"),
            t("result_summary"),
            i("gate_required"),
            t("created_at"),
            t("updated_at"),
            i("resumed_count"),
            i("blocked_count"),
            t("required_scopes"),
            t("min_record"),
            i("corrections_count"),
            i("review_required"),
            t("parent_id"),
            t("requested_by"),
            i("depth"),
            i("max_cost_micros"),
            t("runtime"),
            t("role"),
            t("paths"),
            t("leased"),
        ],
        key: &["id"],
        identity: None,
    },
    // Key hashes move with their agents, so minted keys keep working after a restore.
    TableSpec {
        name: "agents",
        columns: &[
            t("id"),
            t("name"),
            t("kind"),
            t("key_hash"),
            t("scopes"),
            t("created_by"),
            t("created_at"),
            t("revoked_at"),
            t("last_seen"),
        ],
        key: &["id"],
        identity: None,
    },
    TableSpec {
        name: "job_outcomes",
        columns: &[
            t("job_id"),
            t("agent"),
            t("namespace"),
            i("prs_opened"),
            i("prs_merged"),
            i("commits"),
            i("files_changed"),
            i("tests_added"),
            i("ci_green"),
            i("blocked_count"),
            i("resumed_count"),
            i("duration_minutes"),
            t("result_kind"),
            t("verified"),
            t("recorded_at"),
            t("skill_ids_offered"),
            t("skill_ids_used"),
            t("reviewed_by"),
            t("skill_verdict"),
            r("cost_usd"),
            i("turns"),
            i("duration_ms"),
        ],
        key: &["job_id"],
        identity: None,
    },
    TableSpec {
        name: "job_calls",
        columns: &[
            t("call_id"),
            t("job_id"),
            t("namespace"),
            t("agent"),
            t("session"),
            t("model"),
            i("input_tokens"),
            i("output_tokens"),
            i("cache_write_tokens"),
            i("cache_read_tokens"),
            i("cost_micros"),
            t("priced"),
            t("ended"),
            t("started_at"),
            t("ended_at"),
            t("recorded_at"),
        ],
        key: &["call_id"],
        identity: None,
    },
    TableSpec {
        name: "job_doors",
        columns: &[
            t("job_id"),
            t("record_id"),
            t("namespace"),
            t("agent"),
            t("door"),
            t("host"),
            i("port"),
            t("decision"),
            i("bytes_up"),
            i("bytes_down"),
            t("started_at"),
            t("ended_at"),
            t("detail"),
            t("recorded_at"),
        ],
        key: &["job_id", "record_id"],
        identity: None,
    },
    TableSpec {
        name: "skill_evaluations",
        columns: &[
            i("id"),
            t("skill"),
            i("version"),
            t("namespace"),
            t("probe_set_version"),
            r("delta"),
            i("runs"),
            t("verdict"),
            t("evaluated_at"),
        ],
        key: &["id"],
        identity: Some("id"),
    },
    TableSpec {
        name: "skill_edits",
        columns: &[
            i("id"),
            t("skill"),
            i("from_version"),
            i("to_version"),
            t("ops"),
            i("accepted"),
            t("reason"),
            t("evaluated_at"),
        ],
        key: &["id"],
        identity: Some("id"),
    },
    TableSpec {
        name: "skill_failures",
        columns: &[
            i("id"),
            t("skill"),
            t("namespace"),
            t("source_kind"),
            t("source_id"),
            t("note"),
            t("created_at"),
        ],
        key: &["id"],
        identity: Some("id"),
    },
    TableSpec {
        name: "job_outcome_prs",
        columns: &[
            t("job_id"),
            t("pr_url"),
            i("merged"),
            t("merge_verified_at"),
            t("recorded_at"),
        ],
        key: &["job_id", "pr_url"],
        identity: None,
    },
    // Checkmarks point at their log entry, so the log comes first.
    TableSpec {
        name: "log_entries",
        columns: &[
            i("id"),
            t("namespace"),
            t("agent"),
            t("created_at"),
            t("session_id"),
            t("status"),
            t("summary"),
            t("decisions"),
            t("question"),
            t("answer"),
            t("answered_by"),
            t("answered_at"),
            t("visibility"),
            t("push_sha"),
            t("ci_status"),
            t("ci_checked_at"),
            t("job_id"),
            r("cost_usd"),
            i("turns"),
        ],
        key: &["id"],
        identity: Some("id"),
    },
    TableSpec {
        name: "checkmarks",
        columns: &[
            i("id"),
            t("namespace"),
            t("agent"),
            t("checkpoint_at"),
            t("status"),
            t("where_it_stopped"),
            t("next_steps"),
            t("open_question"),
            i("log_entry_id"),
            t("tests_status"),
            t("tested_at"),
            t("build_status"),
            t("built_at"),
            t("job_id"),
            t("resume_requested_at"),
            t("resume_requested_by"),
        ],
        key: &["id"],
        identity: Some("id"),
    },
    // A review verdict is what a review gate's approval rests on: it moves with its jobs.
    TableSpec {
        name: "review_verdicts",
        columns: &[
            i("id"),
            t("repo"),
            i("number"),
            t("namespace"),
            t("reviewer"),
            t("verdict"),
            t("said"),
            t("head_sha"),
            t("comment_url"),
            t("created_at"),
        ],
        key: &["id"],
        identity: Some("id"),
    },
    // Which issue became which job: without it a restored server would take every labelled
    // issue in again as a second job.
    TableSpec {
        name: "intake_issues",
        columns: &[
            t("repo"),
            i("number"),
            i("issue_id"),
            t("namespace"),
            t("job_id"),
            t("body_sha256"),
            t("noted_sha256"),
            t("commented_at"),
            t("closed_at"),
            t("outcome"),
            t("created_at"),
            t("updated_at"),
        ],
        key: &["repo", "number"],
        identity: None,
    },
    TableSpec {
        name: "shared_context",
        columns: &[t("key"), t("value"), t("set_by"), t("updated_at")],
        key: &["key"],
        identity: None,
    },
];

/// Tables a dump leaves out, each with the reason.
pub const NOT_EXPORTED: [(&str, &str); 11] = [
    (
        "settings",
        "carried by the _kv.json sidecar, allowlisted keys only (never cached tokens)",
    ),
    (
        "leader_leases",
        "which replica leads a periodic task: meaningless in another store",
    ),
    (
        "documents_fts",
        "the SQLite full-text index: rebuilt by its triggers as documents are imported",
    ),
    (
        "oauth_clients",
        "OAuth clients register again against the restored server",
    ),
    (
        "oauth_approvals",
        "bound to OAuth clients, which re-register",
    ),
    ("oauth_login_states", "login round trips in flight"),
    ("oauth_codes", "OAuth codes are short-lived secrets"),
    ("oauth_grants", "OAuth grants end with their clients"),
    ("oauth_tokens", "OAuth tokens are not exported"),
    ("console_sessions", "console sessions are not exported"),
    ("rate_counters", "rate-limit windows restart"),
];

/// The exported table named `name`, if any.
pub fn exported(name: &str) -> Option<&'static TableSpec> {
    EXPORTED.iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_come_first_and_names_are_unique() {
        assert_eq!(EXPORTED[0].name, "documents");
        let mut names: Vec<&str> = EXPORTED.iter().map(|t| t.name).collect();
        names.extend(NOT_EXPORTED.iter().map(|(n, _)| *n));
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "a table is listed twice");
    }

    #[test]
    fn keys_and_identities_name_columns_of_their_table() {
        for table in EXPORTED.iter().chain([&SETTINGS]) {
            for key in table.key.iter().chain(table.identity.iter()) {
                assert!(
                    table.column_names().any(|c| c == *key),
                    "{}: {key} is not a column",
                    table.name
                );
            }
        }
    }
}

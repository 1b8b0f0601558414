//! Runs every conformance case against both stores, each on a fresh store: `sqlite::<case>`
//! in a temporary folder and `postgres::<case>` in a new database (see `harness`).

use capsid_tests::conformance;
use capsid_tests::harness::Backend;

/// Expands one case for one backend. `store` cases take `&S`, `probe` cases also a raw SQL
/// probe, `shared` cases an `Arc<S>` they hand to spawned tasks, `elsewhere` cases a second
/// store on the same database (another server's connections and caches).
macro_rules! case {
    (@call store $fresh:ident, $module:ident :: $name:ident) => {
        conformance::$module::$name(&*$fresh.store).await
    };
    (@call probe $fresh:ident, $module:ident :: $name:ident) => {
        conformance::$module::$name(&*$fresh.store, &$fresh.probe).await
    };
    (@call shared $fresh:ident, $module:ident :: $name:ident) => {
        conformance::$module::$name($fresh.store.clone()).await
    };
    (@call elsewhere $fresh:ident, $module:ident :: $name:ident) => {{
        let other = $fresh.another().await;
        conformance::$module::$name(&*$fresh.store, &other).await;
        other.shut().await
    }};
    ($store:ty, $kind:ident $module:ident :: $name:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $name() {
            let Some(fresh) = <$store as Backend>::fresh(stringify!($name)).await else {
                return;
            };
            case!(@call $kind fresh, $module::$name);
            fresh.finish().await;
        }
    };
}

/// Every case, expanded once per backend.
macro_rules! conformance_suite {
    ($($kind:ident $module:ident :: $name:ident;)+) => {
        mod sqlite {
            use super::*;
            $(case!(capsid_store_sqlite::SqliteStore, $kind $module::$name);)+
        }
        mod postgres {
            use super::*;
            $(case!(capsid_store_postgres::PgStore, $kind $module::$name);)+
        }
    };
}

conformance_suite! {
    store gauges::job_gauges_group_by_namespace_and_status;
    store gauges::agent_gauges_and_run_spend_group_by_namespace;
    store documents_write::write_create_update_upsert_snapshots;
    store documents_write::write_defaults_and_null_inputs;
    store documents_write::write_links_replace_clear_and_ignore_duplicates;
    store documents_write::write_appends_audit_rows;
    store documents_guards::write_create_collision_changes_nothing;
    store documents_guards::write_update_of_missing_row_writes_nothing;
    store documents_guards::write_expected_body_mismatch_changes_nothing;
    store documents_paths::delete_removes_edges_at_both_ends_and_snapshots;
    store documents_paths::delete_refusals_change_nothing;
    store documents_paths::move_repoints_edges_and_snapshots;
    store documents_paths::move_refusals_change_nothing;
    store documents_paths::archive_documents_all_or_nothing;
    store documents_read::list_orders_by_namespace_then_path_bytewise;
    store documents_read::find_uses_case_sensitive_glob;
    store documents_search::search_ranks_title_first_with_marked_snippets;
    store documents_search::search_limit_and_no_duplicates;
    store documents_search::search_ranks_best_first_among_many_matches;
    store documents_search::search_ranks_strongest_body_match_first_among_many;
    elsewhere elsewhere::a_read_sees_what_another_server_wrote;
    elsewhere elsewhere::a_search_sees_what_another_server_wrote;
    elsewhere elsewhere::a_revocation_by_another_server_is_seen_on_the_next_lookup;
    store documents_read::backlinks_sorted_by_type_namespace_path;
    store documents_read::documents_exist_in_order;
    store documents_read::page_documents_keyset;
    store documents_packets::brief_rows_contents;
    store documents_packets::lint_rows_contents;
    store documents_packets::last_actor_follows_the_newest_audit_row;
    store documents_point::document_with_actor_is_the_row_and_its_newest_actor;
    store registry::namespaces_register_update_and_count;
    store registry::recent_audit_filters_and_orders;
    store intake::intake_records_an_issue_once;
    store intake::intake_changes_apply_once_from_their_state;
    store intake::open_intake_is_oldest_first_and_bounded;
    shared intake::concurrent_records_of_one_issue_make_one_row;
    store reviews::reviews_record_with_audit_newest_first;
    store reviews::head_reviews_are_one_namespaces_verdicts_on_one_commit;
    store reviews::newest_audit_of_an_action_on_a_path;
    store agents::agents_mint_lookup_revoke_rescope;
    store settings::settings_put_get_expire_delete;
    store settings::settings_compare_and_set;
    store settings::settings_change_with_its_audit_row;
    store settings::settings_change_with_many_audit_rows;
    store settings::nonce_is_claimed_once;
    store settings::leader_lease_acquire_renew_release;
    store settings::skills_and_improve_totals;
    store settings::health_probes;
    store skills::skill_read_by_id;
    store skills::skill_edits_recorded_newest_first;
    store skills::skill_failures_newest_n;
    store skills::skill_credit_counts_with_audit;
    store skill_panel::last_evaluation_of_a_namespace;
    store skill_panel::skill_offers_newest_first;
    probe skill_sources::skill_sources_are_unspent_bounded_and_oldest_first;
    probe skill_sources::verified_jobs_are_sources_until_abstracted;
    probe skill_sources::a_taken_skill_path_writes_nothing;
    probe skill_sources::a_read_back_copy_spends_its_content_in_the_unit;
    store skill_evidence::evaluation_recorded_with_its_audit;
    store skill_evidence::accepted_edit_bumps_the_version_keyed;
    store jobs_claim::post_job_and_open_title_uniqueness;
    store leases::a_claim_leases_its_paths_and_an_overlapping_job_waits;
    store leases::a_job_without_paths_runs_alone;
    store leases::leases_end_with_every_way_a_job_ends;
    shared leases::concurrent_claims_never_hold_overlapping_leases;
    store jobs_claim::claim_targets_and_order;
    store jobs_claim::claim_refused_leaves_job_untouched;
    store jobs_claim::claim_needing_a_record_changes_nothing;
    store jobs_claim::claim_failed_by_decider_marks_failed;
    store jobs_flow::transition_is_keyed_on_status_holder_and_corrections;
    store jobs_flow::transition_to_a_second_claim_is_conflict;
    store jobs_flow::sweep_only_expired_claimed_jobs;
    probe jobs_records::outcomes_write_once_with_nulls_and_pr_rows;
    probe jobs_records::transitions_from_the_row_read_match_the_plain_ones;
    store jobs_records::job_counts_and_status_counts;
    store jobs_records::budgets_sum_reported_costs_since_an_instant;
    store jobs_records::the_ledger_keeps_each_call_once_and_sums_it;
    store jobs_records::door_records_keep_each_connection_once;
    store jobs_records::mirror_rewritten_on_every_transition;
    store hostile::hostile_search_input_is_harmless;
    store hostile::hostile_glob_input_is_harmless;
    shared races::if_match_race_has_one_winner;
    shared races::create_race_has_one_winner;
    shared races::upsert_race_creates_once;
    shared races::claimers_race_claims_each_job_once;
    store runs::runs_one_live_run_per_namespace;
    shared runs::runs_racing_judges_have_one_winner;
    store runs::runs_report_jti_claimed_once;
    store oauth::oauth_clients_expire_and_never_collide;
    store oauth::oauth_counters_count_and_restart;
    store oauth::oauth_login_states_are_spent_once;
    store oauth::oauth_code_replay_revokes_what_it_issued;
    store oauth::oauth_refresh_reuse_revokes_the_grant;
    store oauth::oauth_console_sessions_end;
    store oauth::oauth_purge_keeps_what_is_live;
    store oauth::oauth_revoke_all_grants_ends_every_client;
    shared oauth::oauth_code_race_has_one_winner;
    store backup::backup_export_imports_row_for_row;
    store backup::backup_import_into_empty_store;
    store backup::backup_prune_takes_only_old_history;
    store checkmarks::checkpoint_upserts_one_checkmark_per_namespace_and_agent;
    store checkmarks::log_pages_newest_first_and_the_feed_is_global_only;
    store checkmarks::answers_fill_the_asking_entry_once_and_resumes_are_keyed;
    shared checkmarks::answer_race_has_one_winner;
    store checkmarks::shared_context_last_writer_wins_with_audit;
}

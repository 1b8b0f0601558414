//! Sixty-four MCP clients over two thousand jobs: each claimed once.

use super::*;

async fn sixty_four_clients_claim_each_job_once(s: &TestServer) {
    let run = capsid_tests::server::claim_crowd(s, 64, 2_000).await;
    assert_eq!(run.claimed, 2_000, "every job was claimed: {run:?}");
    assert_eq!(run.distinct, 2_000, "and none twice: {run:?}");
    let probe = s.probe.as_ref().unwrap();
    assert_eq!(
        probe
            .count("SELECT COUNT(*) FROM jobs WHERE namespace = 'queue' AND status = 'done'")
            .await,
        2_000
    );
    assert_eq!(
        probe
            .count("SELECT COUNT(*) FROM audit_log WHERE action = 'job-claimed'")
            .await,
        2_000,
        "one claim audited per job"
    );
    eprintln!(
        "64 clients over 2,000 jobs: {:.0} claims/s (debug build, test machine)",
        run.claimed as f64 / run.elapsed.as_secs_f64()
    );
}

e2e_cases!(crate::e2e_jobs::options();
    sixty_four_clients_claim_each_job_once,
);

//! A claim without an id walks the queue (issue 51, item 6): it takes the first job, in claim
//! order, that this caller may take, passing over jobs it cannot (a flag it lacks, a record it
//! has not earned, a runtime it cannot run, a budget the job does not fit), so a job at the
//! head of the queue that only some drivers may take never stalls the ones behind it. The
//! stores walk at most [`CLAIM_WALK_MAX`] candidates in one transaction; when none can be
//! taken, the refusal names what each one passed over waits on ([`nothing_claimable`]).

use super::Job;

/// The most queued jobs one claim considers before it refuses.
pub const CLAIM_WALK_MAX: usize = 32;

/// The refusal of a claim that passed over every candidate in `skipped` (each with why this
/// caller could not take it), oldest in claim order first.
pub fn nothing_claimable(skipped: &[(Job, String)]) -> String {
    match skipped {
        [] => "no queued job this caller may take.".to_owned(),
        [(_, why)] => why.clone(),
        many => {
            let lines: Vec<String> = many
                .iter()
                .map(|(job, why)| format!("- {} ('{}'): {why}", job.id, job.title))
                .collect();
            format!(
                "none of the {} queued jobs considered can be taken by this caller:\n{}",
                many.len(),
                lines.join("\n")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str, title: &str) -> Job {
        serde_json::from_value(serde_json::json!({
            "id": id, "namespace": "demo", "title": title, "body": "b", "priority": 0,
            "status": "queued", "posted_by": "github:o", "claimed_by": null,
            "claimed_at": null, "lease_expires": null, "result_ref": null, "result_summary": null,
            "gate_required": 0, "review_required": 0, "blocked_count": 0, "resumed_count": 0,
            "corrections_count": 0, "required_scopes": null, "min_record": null,
            "created_at": "2026-01-01T00:00:00.000Z", "updated_at": "2026-01-01T00:00:00.000Z"
        }))
        .expect("a job")
    }

    #[test]
    fn the_refusal_names_what_each_passed_over_job_waits_on() {
        assert_eq!(
            nothing_claimable(&[]),
            "no queued job this caller may take."
        );
        let one = [(job("job_a", "Merge it"), "needs can_merge".to_owned())];
        assert_eq!(nothing_claimable(&one), "needs can_merge");
        let two = [
            (job("job_a", "Merge it"), "needs can_merge".to_owned()),
            (
                job("job_b", "Big one"),
                "does not fit the month's budget".to_owned(),
            ),
        ];
        let text = nothing_claimable(&two);
        assert!(
            text.starts_with("none of the 2 queued jobs considered can be taken by this caller:")
                && text.contains("- job_a ('Merge it'): needs can_merge")
                && text.contains("- job_b ('Big one'): does not fit the month's budget"),
            "{text}"
        );
    }
}

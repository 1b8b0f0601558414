//! Path guards (reference section 5): protected paths, money paths, the auto-merge
//! migration/workflow/lockfile list, and the improve control-surface guard on document writes.

use std::sync::LazyLock;

use regex::{Regex, RegexBuilder};

use crate::improve::anchors::anchors_checksum;

/// One protected-path pattern: its regex source (matched case-insensitively) and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProtectedPattern {
    /// The regex source, as served to drivers by `improve_status` (flags: `i`).
    pub source: &'static str,
    /// Why the path is protected.
    pub reason: &'static str,
}

/// `PROTECTED_PATH_PATTERNS`: the 23-entry core list with the lockfile hardening applied
/// (the `wrangler` entry widened, nine lockfile and workspace files added).
pub const PROTECTED_PATH_PATTERNS: &[ProtectedPattern] = &[
    ProtectedPattern {
        source: r"(^|/)tests?/",
        reason: "test directory",
    },
    ProtectedPattern {
        source: r"\.(test|spec)\.[cm]?[jt]sx?$",
        reason: "test file",
    },
    ProtectedPattern {
        source: r"(^|/)__tests__/",
        reason: "test directory",
    },
    ProtectedPattern {
        source: r"(^|/)\.github/",
        reason: "CI config incl. scorer workflow",
    },
    ProtectedPattern {
        source: r"(^|/)improve/",
        reason: "the loop's own documents",
    },
    ProtectedPattern {
        source: r"(^|/)src/improve-",
        reason: "the loop's own source",
    },
    ProtectedPattern {
        source: r"(^|/)migrations/",
        reason: "database migration",
    },
    ProtectedPattern {
        source: r"(^|/)wrangler\.(jsonc?|toml)(\.example)?$",
        reason: "deployment config",
    },
    ProtectedPattern {
        source: r"(^|/)package(-lock)?\.json$",
        reason: "manifest / lockfile",
    },
    ProtectedPattern {
        source: r"(^|/)tsconfig[^/]*\.json$",
        reason: "compiler config",
    },
    ProtectedPattern {
        source: r"\.(config|conf)\.[cm]?[jt]s$",
        reason: "config file",
    },
    ProtectedPattern {
        source: r"(^|/)\.?eslint[^/]*$",
        reason: "lint config",
    },
    ProtectedPattern {
        source: r"(^|/)\.claude/",
        reason: "agent steering layer",
    },
    ProtectedPattern {
        source: r"(^|/)CLAUDE\.md$",
        reason: "repo briefing",
    },
    ProtectedPattern {
        source: r"(^|/)\.nvmrc$",
        reason: "Node version for the scorer",
    },
    ProtectedPattern {
        source: r"(^|/)\.node-version$",
        reason: "Node version for the scorer",
    },
    ProtectedPattern {
        source: r"(^|/)\.npmrc$",
        reason: "registry / install-script policy",
    },
    ProtectedPattern {
        source: r"(^|/)\.yarnrc[^/]*$",
        reason: "yarn policy",
    },
    ProtectedPattern {
        source: r"(^|/)\.tool-versions$",
        reason: "asdf toolchain",
    },
    ProtectedPattern {
        source: r"(^|/)\.gitattributes$",
        reason: "checkout contents",
    },
    ProtectedPattern {
        source: r"(^|/)\.husky/",
        reason: "git hooks",
    },
    ProtectedPattern {
        source: r"(^|/)scripts/",
        reason: "scripts CI executes",
    },
    ProtectedPattern {
        source: r"(^|/)Makefile$",
        reason: "build glue",
    },
    ProtectedPattern {
        source: r"(^|/)npm-shrinkwrap\.json$",
        reason: "lockfile",
    },
    ProtectedPattern {
        source: r"(^|/)pnpm-lock\.yaml$",
        reason: "lockfile",
    },
    ProtectedPattern {
        source: r"(^|/)pnpm-workspace\.yaml$",
        reason: "workspace manifest",
    },
    ProtectedPattern {
        source: r"(^|/)\.pnpmfile\.cjs$",
        reason: "install hook",
    },
    ProtectedPattern {
        source: r"(^|/)yarn\.lock$",
        reason: "lockfile",
    },
    ProtectedPattern {
        source: r"(^|/)\.yarnrc\.yml$",
        reason: "yarn policy",
    },
    ProtectedPattern {
        source: r"(^|/)bun\.lockb$",
        reason: "lockfile",
    },
    ProtectedPattern {
        source: r"(^|/)deno\.lock$",
        reason: "lockfile",
    },
    ProtectedPattern {
        source: r"(^|/)\.gitmodules$",
        reason: "submodule sources",
    },
];

/// The regex flags every protected pattern is matched with.
pub const PROTECTED_PATTERN_FLAGS: &str = "i";

/// The money-path tripwire (section 5.2), case-insensitive.
pub const MONEY_PATH_PATTERN: &str = r"(^|/)(billing|payments?|checkout|invoices?|pricing|subscriptions?|stripe|payouts?|refunds?)(/|[-_.]|$)";

/// Auto-merge's seventh check (section 5.3), stated apart from the protected list so that
/// removing a protected pattern cannot open auto-merge.
pub const MIGRATION_WORKFLOW_LOCKFILE_PATTERNS: &[&str] = &[
    r"(^|/)migrations/",
    r"(^|/)\.github/workflows/",
    r"(^|/)(package-lock\.json|npm-shrinkwrap\.json|pnpm-lock\.yaml|yarn\.lock|bun\.lockb|deno\.lock)$",
];

fn insensitive(source: &str) -> Regex {
    RegexBuilder::new(source)
        .case_insensitive(true)
        .build()
        .unwrap_or_else(|e| unreachable!("built-in pattern {source} is valid: {e}"))
}

static PROTECTED: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    PROTECTED_PATH_PATTERNS
        .iter()
        .map(|p| insensitive(p.source))
        .collect()
});
static MONEY: LazyLock<Regex> = LazyLock::new(|| insensitive(MONEY_PATH_PATTERN));
static AUTO_MERGE_BLOCKED: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    MIGRATION_WORKFLOW_LOCKFILE_PATTERNS
        .iter()
        .map(|p| insensitive(p))
        .collect()
});

/// The first protected pattern `path` matches, if any.
pub fn protected_match(path: &str) -> Option<&'static ProtectedPattern> {
    PROTECTED
        .iter()
        .zip(PROTECTED_PATH_PATTERNS)
        .find(|(re, _)| re.is_match(path))
        .map(|(_, p)| p)
}

/// Whether `path` trips the money-path wire.
pub fn is_money_path(path: &str) -> bool {
    MONEY.is_match(path)
}

/// Whether `path` is a migration, a workflow or a lockfile (auto-merge's seventh check).
pub fn is_migration_workflow_or_lockfile(path: &str) -> bool {
    AUTO_MERGE_BLOCKED.iter().any(|re| re.is_match(path))
}

/// Whether `path` is under `.github/workflows/` (repo writes there need `allow_workflow_write`).
pub fn is_workflow_path(path: &str) -> bool {
    path.to_ascii_lowercase().starts_with(".github/workflows/")
        || path.to_ascii_lowercase().contains("/.github/workflows/")
}

/// The scorer workflow `ci_dispatch` refuses by name.
pub use crate::improve::workflows::SCORE_WORKFLOW as SCORER_WORKFLOW;

/// The improve control-surface guard (`improveWriteRefusal`, section 5.4).
///
/// `prior_body` is the stored body (`None` when the document does not exist yet), `new_body`
/// the body after the change (`""` for a delete or for the source of a move). Returns the
/// refusal, or `None` when the write may go ahead. `allow_improve_paths` lifts the guard;
/// the caller must separately hold `can_touch_protected` for it.
pub fn improve_write_refusal(
    namespace: &str,
    path: &str,
    prior_body: Option<&str>,
    new_body: &str,
    allow_improve_paths: bool,
) -> Option<String> {
    if allow_improve_paths {
        return None;
    }
    const HINT: &str =
        "pass allow_improve_paths: true (needs the can_touch_protected flag) if this is deliberate";
    for (prefix, what) in [
        (
            "improve/run-",
            "a nightly task document the driver executes",
        ),
        ("improve/prompts/", "the attempt generator's prompt"),
        (
            "improve/skills/",
            "a skill re-injected into other namespaces",
        ),
    ] {
        if path.starts_with(prefix) {
            return Some(format!(
                "refused: {namespace}/{path} is {what} (improve control surface); {HINT}"
            ));
        }
    }
    if path == "improve/scores.md" {
        let before = prior_body.map(anchors_checksum);
        let after = anchors_checksum(new_body);
        if prior_body.is_none() || before != Some(after) {
            return Some(format!(
                "refused: this write changes the Anchors block of {namespace}/improve/scores.md, which pins what the loop may optimise; Secondary-only edits pass; {HINT}"
            ));
        }
    }
    if namespace == "capsid" && path.starts_with("policy/") {
        return Some(format!(
            "refused: capsid/{path} is a signed autonomy policy; edit it deliberately and re-sign it; {HINT}"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_list_has_the_hardened_entries() {
        assert_eq!(PROTECTED_PATH_PATTERNS.len(), 32);
        for path in [
            "tests/a.rs",
            "src/test/x",
            "a.test.ts",
            "x/__tests__/y",
            ".github/workflows/ci.yml",
            "improve/scores.md",
            "src/improve-loop.ts",
            "migrations/0001.sql",
            "wrangler.toml",
            "wrangler.jsonc.example",
            "package.json",
            "package-lock.json",
            "tsconfig.build.json",
            "vite.config.ts",
            ".eslintrc.cjs",
            ".claude/settings.json",
            "CLAUDE.md",
            ".nvmrc",
            ".node-version",
            ".npmrc",
            ".yarnrc",
            ".tool-versions",
            ".gitattributes",
            ".husky/pre-push",
            "scripts/deploy.mjs",
            "Makefile",
            "npm-shrinkwrap.json",
            "pnpm-lock.yaml",
            "pnpm-workspace.yaml",
            ".pnpmfile.cjs",
            "yarn.lock",
            ".yarnrc.yml",
            "bun.lockb",
            "deno.lock",
            ".gitmodules",
            "sub/dir/yarn.lock",
            "MAKEFILE",
        ] {
            assert!(
                protected_match(path).is_some(),
                "{path} should be protected"
            );
        }
        for path in [
            "src/main.rs",
            "README.md",
            "docs/testing.md",
            "contest/x.rs",
            "lockfile.txt",
        ] {
            assert!(
                protected_match(path).is_none(),
                "{path} should not be protected"
            );
        }
        assert_eq!(
            protected_match("a/tests/b").map(|p| p.reason),
            Some("test directory")
        );
    }

    #[test]
    fn money_paths_are_a_broad_tripwire() {
        for p in [
            "billing/x.ts",
            "src/stripe-client.ts",
            "subscription-less.ts",
            "Payments/a",
            "refund",
            "a/pricing.md",
        ] {
            assert!(is_money_path(p), "{p}");
        }
        for p in [
            "src/bill.ts",
            "stripes.ts",
            "docs/checkouts.md",
            "repayment/x",
        ] {
            assert!(!is_money_path(p), "{p}");
        }
    }

    #[test]
    fn auto_merge_list() {
        assert!(is_migration_workflow_or_lockfile("db/migrations/1.sql"));
        assert!(is_migration_workflow_or_lockfile(".github/workflows/x.yml"));
        assert!(is_migration_workflow_or_lockfile("web/Yarn.lock"));
        assert!(!is_migration_workflow_or_lockfile(".github/CODEOWNERS"));
        assert!(!is_migration_workflow_or_lockfile("Cargo.lock"));
    }

    #[test]
    fn improve_guard() {
        assert!(
            improve_write_refusal("x", "improve/run-2026-01-01.md", None, "b", false).is_some()
        );
        assert!(
            improve_write_refusal("x", "improve/prompts/a.md", Some("a"), "b", false).is_some()
        );
        assert!(improve_write_refusal("x", "improve/skills/s.md", Some("a"), "", false).is_some());
        assert!(improve_write_refusal("x", "improve/skills/s.md", Some("a"), "", true).is_none());
        assert!(improve_write_refusal("x", "improve/archive/r/a.md", None, "b", false).is_none());
        assert!(
            improve_write_refusal("capsid", "policy/gates.md", Some("a"), "b", false).is_some()
        );
        assert!(improve_write_refusal("other", "policy/gates.md", Some("a"), "b", false).is_none());

        let scores = "# Scores\n\n## Anchors\n- tests: required\n\n## Secondary\n- size: minimize weight 1\n";
        let secondary_only = "# Scores\n\n## Anchors\n- tests: required\n\n## Secondary\n- size: minimize weight 2\n";
        let anchor_change =
            "# Scores\n\n## Anchors\n- tests: min 3\n\n## Secondary\n- size: minimize weight 1\n";
        assert!(
            improve_write_refusal("x", "improve/scores.md", None, scores, false).is_some(),
            "create counts as a change"
        );
        assert!(
            improve_write_refusal(
                "x",
                "improve/scores.md",
                Some(scores),
                secondary_only,
                false
            )
            .is_none()
        );
        assert!(
            improve_write_refusal("x", "improve/scores.md", Some(scores), anchor_change, false)
                .is_some()
        );
        assert!(
            improve_write_refusal("x", "improve/scores.md", Some(scores), "", false).is_some(),
            "delete changes anchors"
        );
    }
}

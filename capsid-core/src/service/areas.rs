//! What a tool handler is given: [`Areas`], the area contexts, each holding only the role
//! ports its handlers use (the scheduler's on-demand tick among them, as a
//! [`improve::Ticker`]). Never the composite store:
//! the one field that leads back to the [`Service`] is private to this module, and the
//! handlers live in their areas' modules, so no handler can name it (the invariant of
//! ARCHITECTURE.md "A handler sees role ports"; `handler_sources_never_name_the_store`
//! below checks the sources as well).

use super::{Service, agents, checkmarks, documents, improve, jobs, maintenance, repo};

/// The contexts a tool handler may reach. Cheap to copy.
#[derive(Clone, Copy)]
pub struct Areas<'a> {
    service: &'a Service,
}

impl std::fmt::Debug for Areas<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Areas").finish_non_exhaustive()
    }
}

impl<'a> Areas<'a> {
    /// The areas of `service`, for the registry's dispatch (after the one check).
    pub(crate) fn of(service: &'a Service) -> Areas<'a> {
        Areas { service }
    }

    /// The documents area.
    pub(crate) fn documents(self) -> documents::DocumentsCx<'a> {
        self.service.documents()
    }

    /// The maintenance area (namespaces, lint).
    pub(crate) fn maintenance(self) -> maintenance::MaintenanceCx<'a> {
        self.service.maintenance()
    }

    /// The repo area.
    pub(crate) fn repo(self) -> repo::RepoCx<'a> {
        self.service.repo()
    }

    /// The jobs area.
    pub(crate) fn jobs(self) -> jobs::JobsCx<'a> {
        self.service.jobs()
    }

    /// The improve area (status, control, the loop, skills).
    pub(crate) fn improve(self) -> improve::ImproveCx<'a> {
        self.service.improve()
    }

    /// The checkmarks area.
    pub(crate) fn checkmarks(self) -> checkmarks::CheckmarksCx<'a> {
        self.service.checkmarks()
    }

    /// The agents area.
    pub(crate) fn agents(self) -> agents::AgentsCx<'a> {
        self.service.agents()
    }
}

#[cfg(test)]
mod tests {
    /// Every source file under `src/service/` that defines or serves tool handlers, with
    /// what it may not contain: the composite store (`self.store`, `s.store`, `.store()`),
    /// or a `Service` handed to a handler.
    /// Whether `text` holds `needle` as its own word (`requirements.stored_scopes` does not
    /// name `s.store`).
    fn names(text: &str, needle: &str) -> bool {
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        text.match_indices(needle).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + needle.len()..].chars().next();
            !before.is_some_and(ident) && !after.is_some_and(ident)
        })
    }

    #[test]
    fn the_word_check_tells_a_name_from_a_prefix() {
        assert!(names("let x = s.store.setting(k);", "s.store"));
        assert!(names("self.store\n    .runs(", "self.store"));
        assert!(!names("requirements.stored_required_scopes()", "s.store"));
        assert!(!names("let stores.store_x = 1;", "s.store"));
    }

    #[test]
    fn handler_sources_never_name_the_store() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/service");
        // The files that wire contexts from the service, or are the service's own
        // maintenance (the scheduler, backups, restore, metrics, the autonomy, CI-poll and
        // scout tasks the leader runs): none of them is reached by a handler except through
        // the improve area's `Ticker`.
        let wiring = [
            "mod.rs",
            "areas.rs",
            "registry.rs",
            "schedule.rs",
            "metrics.rs",
            "surfaces.rs",
            "recording_store",
            "backup",
            "autonomy",
            "checkmarks/ci_poll.rs",
            "scouts.rs",
            "tests.rs",
            "gate_props.rs",
        ];
        let mut offenders = Vec::new();
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("src/service is readable") {
                let path = entry.expect("a directory entry").path();
                let rel = path
                    .strip_prefix(&root)
                    .expect("under src/service")
                    .to_string_lossy()
                    .into_owned();
                if wiring
                    .iter()
                    .any(|w| rel == *w || rel.starts_with(&format!("{w}/")))
                {
                    continue;
                }
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let text = std::fs::read_to_string(&path).expect("a source file");
                // Tests of a module may build a service over a refusing store.
                let production = text.split("#[cfg(test)]").next().unwrap_or_default();
                for needle in ["self.store", "s.store", ".store()", "&'a Service"] {
                    if names(production, needle) {
                        offenders.push(format!("{rel}: {needle}"));
                    }
                }
            }
        }
        assert!(
            offenders.is_empty(),
            "a handler's module reaches the composite store: {offenders:?}"
        );
    }
}

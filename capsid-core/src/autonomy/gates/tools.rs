//! The migration tools a namespace's `additive_migration` gate recognises, from its runner
//! setting `migration_tools` (issue 56, item 13): `d1` (`wrangler d1 execute ... --file`, the
//! Worker's and the default), `psql` (`psql ... -f <file>`) and `sqlx` (`sqlx migrate run`).
//! A tool not named is not recognised, so its command matches no class.

use std::fmt;

/// A migration tool the gate can read the statements of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MigrationTool {
    /// `wrangler d1 execute <db> ... --file <path>` (the Worker's; the default).
    D1,
    /// `psql ... -f <path>` or `--file=<path>`: one file, read and checked.
    Psql,
    /// `sqlx migrate run [--source <dir>]`: every pending migration of the folder, so every
    /// file in it is read and checked.
    Sqlx,
}

impl MigrationTool {
    /// Every tool, in the order the setting lists them.
    pub const ALL: [MigrationTool; 3] =
        [MigrationTool::D1, MigrationTool::Psql, MigrationTool::Sqlx];

    /// The tool's name in the setting.
    pub fn name(self) -> &'static str {
        match self {
            MigrationTool::D1 => "d1",
            MigrationTool::Psql => "psql",
            MigrationTool::Sqlx => "sqlx",
        }
    }
}

impl fmt::Display for MigrationTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The tools a namespace's gate recognises: never empty; `d1` alone by default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MigrationTools(Vec<MigrationTool>);

impl Default for MigrationTools {
    fn default() -> MigrationTools {
        MigrationTools(vec![MigrationTool::D1])
    }
}

impl MigrationTools {
    /// The tools `text` names (comma or space separated, any case, each once), or the refusal
    /// naming the setting, the word and the tools there are.
    pub fn parse(text: &str) -> Result<MigrationTools, String> {
        let mut tools = Vec::new();
        for word in text.split([',', ' ']).filter(|w| !w.is_empty()) {
            let Some(tool) = MigrationTool::ALL
                .into_iter()
                .find(|t| t.name().eq_ignore_ascii_case(word))
            else {
                return Err(format!(
                    "migration_tools: '{word}' is not a migration tool the gate can check (one of {})",
                    MigrationTool::ALL.map(MigrationTool::name).join(", ")
                ));
            };
            if !tools.contains(&tool) {
                tools.push(tool);
            }
        }
        if tools.is_empty() {
            return Err(format!(
                "migration_tools: name at least one of {}",
                MigrationTool::ALL.map(MigrationTool::name).join(", ")
            ));
        }
        Ok(MigrationTools(tools))
    }

    /// The tools a stored setting names: none stored, or one that no longer parses, is the
    /// default (`d1`), which recognises the least.
    pub fn stored(text: Option<&str>) -> MigrationTools {
        text.and_then(|t| MigrationTools::parse(t).ok())
            .unwrap_or_default()
    }

    /// Whether `tool` is recognised.
    pub fn has(&self, tool: MigrationTool) -> bool {
        self.0.contains(&tool)
    }

    /// The setting's text, comma separated.
    pub fn to_setting(&self) -> String {
        self.0
            .iter()
            .map(|t| t.name())
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_names_tools_once_each_in_any_case() {
        let parsed = MigrationTools::parse("sqlx, PSQL sqlx").expect("tools");
        assert_eq!(parsed.to_setting(), "sqlx,psql");
        assert!(parsed.has(MigrationTool::Sqlx) && parsed.has(MigrationTool::Psql));
        assert!(!parsed.has(MigrationTool::D1));
        assert_eq!(MigrationTools::default().to_setting(), "d1");
        assert_eq!(
            MigrationTools::parse("d1,psql,sqlx").map(|t| t.to_setting()),
            Ok("d1,psql,sqlx".to_owned())
        );
        assert_eq!(
            MigrationTools::parse("sqlx,flyway"),
            Err("migration_tools: 'flyway' is not a migration tool the gate can check (one of d1, psql, sqlx)".to_owned())
        );
        for empty in ["", " , ", ","] {
            assert_eq!(
                MigrationTools::parse(empty),
                Err("migration_tools: name at least one of d1, psql, sqlx".to_owned()),
                "{empty:?}"
            );
        }
        assert_eq!(MigrationTool::Psql.to_string(), "psql");
    }

    #[test]
    fn a_stored_setting_that_does_not_parse_is_the_default() {
        assert_eq!(MigrationTools::stored(None), MigrationTools::default());
        assert_eq!(
            MigrationTools::stored(Some("flyway")),
            MigrationTools::default()
        );
        assert_eq!(MigrationTools::stored(Some("psql")).to_setting(), "psql");
    }
}

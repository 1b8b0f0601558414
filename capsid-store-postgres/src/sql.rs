//! A small builder for the few queries whose filters are optional: it numbers `$n`
//! placeholders so each combination of filters gets its own plain, index-friendly SQL text
//! (no `$1 IS NULL OR ...` predicates that a generic plan could not use an index for).

/// SQL text under construction. `$?` in a fragment stands for the next parameter.
#[derive(Debug)]
pub(crate) struct SqlText {
    sql: String,
    params: usize,
    filters: usize,
}

impl SqlText {
    /// Starts with `base` (which may itself hold `$?` placeholders).
    pub(crate) fn new(base: &str) -> Self {
        let mut text = SqlText {
            sql: String::with_capacity(base.len() + 128),
            params: 0,
            filters: 0,
        };
        text.push(base);
        text
    }

    /// Appends `fragment`, numbering its `$?` placeholders.
    pub(crate) fn push(&mut self, fragment: &str) -> &mut Self {
        let mut rest = fragment;
        while let Some(at) = rest.find("$?") {
            self.sql.push_str(&rest[..at]);
            self.params += 1;
            self.sql.push('$');
            self.sql.push_str(&self.params.to_string());
            rest = &rest[at + 2..];
        }
        self.sql.push_str(rest);
        self
    }

    /// Appends `clause` as the next `WHERE`/`AND` condition.
    pub(crate) fn and(&mut self, clause: &str) -> &mut Self {
        self.filters += 1;
        self.sql.push_str(if self.filters == 1 {
            " WHERE "
        } else {
            " AND "
        });
        self.push(clause)
    }

    /// The finished text.
    pub(crate) fn finish(self) -> String {
        self.sql
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_placeholders_across_fragments() {
        let mut text = SqlText::new("SELECT 1 FROM t");
        text.and("a = $?")
            .and("(b, c) > ($?, $?)")
            .push(" LIMIT $?");
        assert_eq!(
            text.finish(),
            "SELECT 1 FROM t WHERE a = $1 AND (b, c) > ($2, $3) LIMIT $4"
        );
    }

    #[test]
    fn no_filters_means_no_where() {
        let mut text = SqlText::new("SELECT 1 FROM t");
        text.push(" LIMIT $?");
        assert_eq!(text.finish(), "SELECT 1 FROM t LIMIT $1");
    }
}

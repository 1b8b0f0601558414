//! The audit log: the row every audited change appends inside its own unit of work, and
//! the `AuditLog` port (a row on its own, the newest rows, one document's newest of an
//! action).

use capsid_core::ports::{AuditEntry, AuditFilter, AuditRow, StoreResult};

use crate::engine::in_unit;
use crate::engine::{Engine, TxError, always, read_all};
use crate::exec::Exec;
use crate::row::Row;
use crate::stmt::Stmt;

const INSERT_AUDIT: &str = "INSERT INTO audit_log (actor, action, namespace, path, params, at) VALUES ($1, $2, $3, $4, $5, $6)";

/// Appends `entry` in the caller's transaction; `params` is stored as JSON text.
pub async fn insert(x: &mut dyn Exec, entry: &AuditEntry) -> Result<(), sqlx::Error> {
    x.execute(
        Stmt::new(INSERT_AUDIT)
            .bind(&entry.actor)
            .bind(&entry.action)
            .bind(entry.namespace.as_deref())
            .bind(entry.path.as_deref())
            .bind(entry.params.to_string())
            .bind(entry.at),
    )
    .await?;
    Ok(())
}

const COLUMNS: &str = "SELECT id, actor, action, namespace, path, params, at FROM audit_log";

fn audit_row(row: &Row) -> Result<AuditRow, sqlx::Error> {
    Ok(AuditRow {
        id: row.int("id")?,
        actor: row.opt_text("actor")?,
        action: row.opt_text("action")?,
        namespace: row.opt_text("namespace")?,
        path: row.opt_text("path")?,
        params: row.opt_text("params")?,
        at: row.time("at")?,
    })
}

/// `recent_audit`'s statement: newest first, filtered by namespace and/or actor (each served
/// by its `(column, id DESC)` index); the stores' plan checks explain it.
pub fn recent_audit_stmt(filter: &AuditFilter, limit: usize) -> Stmt {
    let mut sql = String::from(COLUMNS);
    let mut n = 0;
    let mut args = Vec::new();
    for (column, value) in [("namespace", &filter.namespace), ("actor", &filter.actor)] {
        if let Some(value) = value {
            n += 1;
            sql.push_str(if n == 1 { " WHERE " } else { " AND " });
            sql.push_str(&format!("{column} = ${n}"));
            args.push(value.clone());
        }
    }
    sql.push_str(&format!(" ORDER BY id DESC LIMIT ${}", n + 1));
    args.into_iter()
        .fold(Stmt::new(sql), Stmt::bind)
        .bind(limit)
}

/// `AuditLog::append_audit`: one row in a unit of its own.
pub async fn append_audit(engine: &impl Engine, entry: AuditEntry) -> StoreResult<()> {
    let entry = &entry;
    in_unit!(engine, always, |tx| insert(&mut *tx, entry)
        .await
        .map_err(TxError::from))
}

/// `AuditLog::recent_audit`.
pub async fn recent_audit(
    engine: &impl Engine,
    filter: &AuditFilter,
    limit: usize,
) -> StoreResult<Vec<AuditRow>> {
    read_all(engine, recent_audit_stmt(filter, limit), audit_row).await
}

/// `AuditLog::newest_audit`: the newest row of `action` on one document.
pub async fn newest_audit(
    engine: &impl Engine,
    action: &str,
    namespace: &str,
    path: &str,
) -> StoreResult<Option<AuditRow>> {
    let sql = format!(
        "{COLUMNS} WHERE namespace = $1 AND path = $2 AND action = $3 ORDER BY id DESC LIMIT 1"
    );
    let stmt = Stmt::new(sql).bind(namespace).bind(path).bind(action);
    Ok(read_all(engine, stmt, audit_row).await?.pop())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_audit_numbers_its_parameters() {
        let both = AuditFilter {
            namespace: Some("n".into()),
            actor: Some("a".into()),
        };
        let s = recent_audit_stmt(&both, 5);
        assert!(
            s.sql
                .ends_with("WHERE namespace = $1 AND actor = $2 ORDER BY id DESC LIMIT $3"),
            "{}",
            s.sql
        );
        assert_eq!(s.args.len(), 3);
        let actor = AuditFilter {
            namespace: None,
            actor: Some("a".into()),
        };
        assert!(
            recent_audit_stmt(&actor, 5)
                .sql
                .ends_with("WHERE actor = $1 ORDER BY id DESC LIMIT $2")
        );
        let none = recent_audit_stmt(&AuditFilter::default(), 5);
        assert!(none.sql.ends_with("audit_log ORDER BY id DESC LIMIT $1"));
        assert_eq!(none.args, [crate::stmt::Arg::Int(5)]);
    }
}

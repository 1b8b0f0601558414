//! The gate-command classifier, the never-list and the migration SQL classifier: never
//! panic; a command on the never-list is never classified as pre-approvable.
#![no_main]

use capsid_core::autonomy::gates::{
    classify_command, classify_migration_sql, never_list_reason, split_statements,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(command) = std::str::from_utf8(data) else {
        return;
    };
    let never = never_list_reason(command.trim());
    let classified = classify_command(command);
    let _ = split_statements(command);
    let _ = classify_migration_sql(command);
    if never.is_some() {
        assert!(
            classified.is_err(),
            "{command:?} is on the never-list but classified"
        );
    }
});

//! Tool arguments, parsed and bounded as `Service::call_tool` parses them before its scope
//! check (`parse_tool_args` runs the registry entry's own parse, the one `call_tool` runs).
//! The first byte picks the tool from the registry; the rest is the JSON arguments. Never
//! panics.
#![no_main]

use capsid_core::service::{REGISTRY, parse_tool_args};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((pick, rest)) = data.split_first() else {
        return;
    };
    let tool = REGISTRY[usize::from(*pick) % REGISTRY.len()].spec.name;
    let Ok(args) = serde_json::from_slice::<serde_json::Value>(rest) else {
        return;
    };
    let _ = parse_tool_args(tool, args);
});

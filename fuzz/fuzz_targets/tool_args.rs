//! Tool arguments, parsed and bounded as `Service::call_tool` parses them before its scope
//! check (`parse_tool_args`, held to `call_tool` by a property test in the core). The first
//! byte picks the tool from the table; the rest is the JSON arguments. Never panics.
#![no_main]

use capsid_core::service::parse_tool_args;
use capsid_core::tools::TOOLS;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((pick, rest)) = data.split_first() else {
        return;
    };
    let tool = TOOLS[usize::from(*pick) % TOOLS.len()].name;
    let Ok(args) = serde_json::from_slice::<serde_json::Value>(rest) else {
        return;
    };
    let _ = parse_tool_args(tool, args);
});

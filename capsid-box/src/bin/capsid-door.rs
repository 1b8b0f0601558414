//! The inside end of the box's bridges, for the tests: `capsid-door --listen 127.0.0.1:9000
//! --to /run/doors/x.sock [...] [-- PROGRAM ARGS]`. The `capsid` binary runs the same
//! [`capsid_box::bridge::serve_inside`] as a hidden subcommand.

fn main() {
    // The gateway's path rule, as the mirror's `pre-receive` hook asks it.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == capsid_box::gateway::paths::CHECK_ARG)
    {
        std::process::exit(capsid_box::gateway::paths::check_from_hook());
    }
    let args = match capsid_box::bridge::parse_inside_args(std::env::args_os().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("capsid-door: {e}");
            std::process::exit(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("capsid-door: cannot start a runtime: {e}");
            std::process::exit(1);
        }
    };
    match runtime.block_on(capsid_box::bridge::serve_inside(args)) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("capsid-door: {e}");
            std::process::exit(1);
        }
    }
}

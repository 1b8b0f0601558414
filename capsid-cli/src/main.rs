//! The `capsid` binary. The server and its commands arrive with the issue "The capsid server";
//! until then it says so instead of pretending.

fn main() {
    eprintln!(
        "capsid {}: the server is not built yet; see README.md",
        env!("CARGO_PKG_VERSION")
    );
    std::process::exit(2);
}

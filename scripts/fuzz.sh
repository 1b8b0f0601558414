#!/usr/bin/env bash
# Builds every fuzz target of fuzz/ on the stable toolchain (`-s none`: no sanitizer, which
# would need nightly) and runs each for SECONDS (default 12; scripts/test.sh passes 10) over the committed seeds in
# fuzz/seeds plus what earlier runs found (fuzz/corpus, not committed). A crash fails the run;
# libFuzzer leaves the input in fuzz/artifacts/<target>/, and `cargo fuzz run -s none <target>
# <that file>` reproduces it. Installs cargo-fuzz from crates.io when it is missing.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${1:-12}"

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz from crates.io"
  cargo install cargo-fuzz --locked --version 0.13.2
fi

started=$(date +%s)
cargo fuzz build -s none
built=$(date +%s)
echo "fuzz: built every target in $((built - started)) s"

for target in $(cargo fuzz list); do
  mkdir -p "corpus/$target" "seeds/$target"
  echo "fuzz: $target for ${seconds} s"
  log="target/fuzz-$target.log"
  mkdir -p target
  if ! cargo fuzz run -s none "$target" "corpus/$target" "seeds/$target" -- \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "fuzz: $target FAILED (the crashing input is under fuzz/artifacts/$target/)" >&2
    exit 1
  fi
  grep -E '^Done' "$log" || true
done
echo "fuzz: every target ran; the whole step took $(($(date +%s) - started)) s"

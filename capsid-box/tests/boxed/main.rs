//! The box and its doors against real bubblewrap, in one test binary.

mod common;
mod doors;
mod gateway;
mod model_proxy;
mod sandbox;

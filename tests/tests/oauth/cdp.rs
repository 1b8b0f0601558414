//! The DevTools client lives in the test-support crate (`capsid_tests::cdp`), shared with the
//! command line's real-binary console tests.

pub(crate) use capsid_tests::cdp::Chrome;

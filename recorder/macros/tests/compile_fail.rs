//! What `#[trace]` refuses, and the messages it gives (tests/ui/*.stderr).
//! Regenerate the expected output with `TRYBUILD=overwrite`.

#[test]
fn trace_rejects_what_it_cannot_time() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}

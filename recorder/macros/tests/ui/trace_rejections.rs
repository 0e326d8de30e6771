// What #[trace] refuses: an async fn, an `arg` that is not a parameter, an unknown option.
#[ringtrace::trace]
async fn fetch() -> u32 {
    7
}

#[ringtrace::trace(arg = missing)]
fn no_such_parameter(n: u64) -> u64 {
    n
}

#[ringtrace::trace(name = "x")]
fn unknown_option() {}

fn main() {}

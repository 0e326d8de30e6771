//! rtconv's exit statuses, and how a command's outcome maps to one.

use rtconv::batch::Summary;

/// The command line asks for something impossible (clap's own status for a bad argument).
pub const USAGE: u8 = 2;

/// The output was written, but data or names were lost on the way (a
/// damaged dump, unnamed keys, some dumps of a batch failed).
pub const DEGRADED: u8 = 3;

/// `rtconv diff --fail-on` found a change over its limit.
pub const THRESHOLD: u8 = 4;

/// A batch's status: 0 all converted, [`DEGRADED`] some salvaged or
/// failed, 1 none converted.
pub fn of_summary(summary: &Summary) -> u8 {
    match (summary.converted + summary.salvaged, summary.salvaged + summary.failed) {
        (0, _) => 1,
        (_, 0) => 0,
        _ => DEGRADED,
    }
}

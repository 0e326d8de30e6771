//! Output formats, one file each, all streaming from one [`Timeline`](crate::timeline::Timeline).

pub mod chrome;
pub mod folded;
pub mod ftrace;
pub mod systrace;
mod text;

//! Every output, one file each. The timeline renderers stream from one
//! [`Timeline`](crate::model::Timeline) to any `io::Write` and return what
//! the spans they read had wrong ([`Anomalies`](crate::model::Anomalies));
//! the summary writers print what [`crate::stats`] computed.

pub mod call_tree;
pub mod chrome;
pub mod diff;
pub mod firefox;
pub mod folded;
pub mod ftrace;
pub mod perfetto;
pub mod pprof;
mod protobuf;
pub mod stats_table;
pub mod systrace;
pub(crate) mod text;

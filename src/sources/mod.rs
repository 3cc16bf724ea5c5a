//! Sources: where bytes come from (files and directories, the directory watcher, the OTLP
//! receiver, an attached `serve` feed). Sources hand parsed [`crate::model::Batch`]es onward.

pub mod files;

//! Sources: files, the directory watcher, the receiver attached live, and remote backends.

// The layers below, under the module names the code uses.
use toolcap_formats::formats;
use toolcap_model::{machine, model, system};
use toolcap_receiver::receiver;
use toolcap_store::store;

mod error;
pub mod sources;

pub use error::Error;

//! The OTLP receiver: HTTP and gRPC endpoints, decoding, limits and the spool of `serve`.

// The layers below, under the module names the code uses.
use toolcap_formats::formats;
use toolcap_model::{logging, redact, system};

mod error;
pub mod receiver;

pub use error::Error;

//! Reading traces: every format against its corpus, hostile and broken inputs, payload ranges,
//! the store's trees, fuzz findings, and the headless `dump` through the real binary.
//!
//! One test binary for the family, so the library is linked once for all of it.

mod big_file_pieces;
mod case_keys;
mod cli_polish;
mod dump_filter;
mod dump_json_escapes;
mod formats_agents;
mod formats_logs;
mod fuzz_regressions;
#[path = "../common/inspect_fixtures.rs"]
mod inspect_fixtures;
mod inspect_logs;
#[path = "../common/inspect_many.rs"]
mod inspect_many;
#[path = "../common/inspect_real.rs"]
mod inspect_real;
mod inspect_real_logs;
mod otlp_corpus;
mod otlp_dump_schema;
mod otlp_encodings;
mod otlp_facts;
mod otlp_negative;
mod payload_ranges;
#[path = "../common/protobuf_bytes.rs"]
mod protobuf_bytes;
mod query_index;
mod store_incremental;
mod store_split_files;
mod summary_queries;

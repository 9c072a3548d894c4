//! libos, GSP-RM's operating system: its log buffers ([`log`]).

pub mod log;

pub use log::{
    LogDecodeError, LogMetadata, LogRecord, LoggingImage, RawLog, decode_records, raw_log,
};

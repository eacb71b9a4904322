//! Upstream streams (SPEC §R6): what each event means for the watchdogs
//! (`progress`), the readiness gate that decides when a stream is
//! committed to the client (`readiness`), and the relay that carries it to
//! its last byte under the content-stall watchdog (`relay`).

pub mod progress;
pub mod readiness;
pub mod relay;

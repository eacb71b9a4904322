//! Upstream streams (SPEC §R6): what each event means for the watchdogs
//! (`progress`), the readiness gate that decides when a stream is
//! committed to the client (`readiness`), the relay that carries it to its
//! last byte under the content-stall watchdog (`relay`), and the
//! keepalives the client gets while the gateway waits (`keepalive`); the
//! frames the gateway writes itself, in the client's protocol (`frames`);
//! whole events only to the client, never half of one (`whole`).

pub mod frames;
pub mod keepalive;
pub mod progress;
pub mod readiness;
pub mod relay;
pub mod whole;

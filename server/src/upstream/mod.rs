//! Everything about talking to providers: the catalog (code, not data),
//! request building with headers made from scratch, and the HTTP executor.

pub mod catalog;
mod connector;
pub mod executor;

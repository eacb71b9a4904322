//! Which connections may serve a request: the live connection registry
//! (memory, reloaded on every change) and model addressing.

pub mod affinity;
pub mod aliases;
pub mod combo_state;
pub mod combos;
pub mod connection_order;
pub mod handoffs;
pub mod leases;
pub mod quota;
pub mod registry;
pub mod resolve;
pub mod strategies;

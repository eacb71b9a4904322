//! The wire protocols clients and upstreams speak, and translation between
//! them through one internal representation ([`ir`]): each protocol module
//! reads and writes requests, complete responses and stream events;
//! [`translate`] pairs them up.

pub mod anthropic;
pub mod code_assist;
pub mod gemini;
pub mod gemini_inbound;
pub mod ir;
pub mod json;
pub mod openai_chat;
pub mod responses;
pub mod sse;
pub mod translate;

//! How server functions send their answers: JSON, read back as text.
//!
//! Why not server_fn's own `Json`: it reads an answer with
//! `serde_json::from_slice`, while a resource hydrates the same value from
//! the page with `serde_json::from_str`. The two readers are different
//! types, so every answer's deserializer was compiled into the wasm twice
//! (about a tenth of the bundle). Reading the answer as `&str` shares the
//! one the resources already need.

use server_fn::{Bytes, ContentType, Decodes, Encodes, Format, FormatType, codec::Post};

use serde::{Serialize, de::DeserializeOwned};

/// JSON whose client side decodes through `&str`.
pub struct JsonText;

impl ContentType for JsonText {
    const CONTENT_TYPE: &'static str = "application/json";
}

impl FormatType for JsonText {
    const FORMAT_TYPE: Format = Format::Text;
}

impl<T: Serialize> Encodes<T> for JsonText {
    type Error = serde_json::Error;

    fn encode(output: &T) -> Result<Bytes, Self::Error> {
        serde_json::to_vec(output).map(Bytes::from)
    }
}

impl<T: DeserializeOwned> Decodes<T> for JsonText {
    type Error = serde_json::Error;

    fn decode(bytes: Bytes) -> Result<T, Self::Error> {
        let text = std::str::from_utf8(&bytes).map_err(serde::de::Error::custom)?;
        serde_json::from_str(text)
    }
}

/// The answer encoding of every `/sfn` function.
pub type Answer = Post<JsonText>;

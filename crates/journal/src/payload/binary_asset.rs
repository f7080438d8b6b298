//! `session.binary_asset`: bytes stored once and referenced by id (attached images, ...).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::payload;

/// `session.binary_asset`: the canonical bytes of a content-addressed asset.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionBinaryAsset {
    /// Content-addressed id, `sha256:<hex>`.
    pub asset_id: String,
    /// `image` or `resource`.
    #[serde(rename = "type")]
    pub asset_type: String,
    /// MIME type of the bytes.
    pub mime_type: String,
    /// Decoded length of `data`.
    pub byte_length: u64,
    /// The bytes, base64.
    pub data: String,
    /// What the bytes are, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Metadata of the producer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}
payload!(SessionBinaryAsset, "session.binary_asset");

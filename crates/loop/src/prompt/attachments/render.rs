//! Rendering recorded attachments into the model's user message: `<tagged_files>` and
//! `<github_references>` after the text, then one content part per natively sent attachment
//! (images as `data:` URLs, text blobs as `<attachment>` blocks, documents as documents), as
//! the Copilot CLI sends them.
//!
//! Works from the journal's record alone (attachments as `user.message` holds them, bytes from
//! `session.binary_asset`), so the model sees the same message on every call and after a resume.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;

use super::ContentPart;

/// The bytes of an asset, as the session recorded them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asset<'a> {
    /// MIME type of the bytes.
    pub mime_type: &'a str,
    /// The bytes, base64.
    pub data: &'a str,
}

/// The user message's full text and its further parts, from its `transformedContent`, its
/// recorded attachments and a lookup of recorded assets by id.
pub fn model_content<'a>(
    transformed: &str,
    attachments: &[Value],
    asset: impl Fn(&str) -> Option<Asset<'a>>,
) -> (String, Vec<ContentPart>) {
    let mut text = transformed.to_owned();
    let tagged: Vec<&str> = attachments
        .iter()
        .filter_map(|a| a.get("taggedFilesEntry").and_then(Value::as_str))
        .collect();
    if !tagged.is_empty() {
        text.push_str("\n\n<tagged_files>\n");
        text.push_str(&tagged.join("\n"));
        text.push_str("\n</tagged_files>");
    }
    let refs: Vec<String> = attachments
        .iter()
        .filter(|a| kind(a) == "github_reference")
        .map(|a| {
            format!(
                "#{} - {} [{}] [{}] ({})",
                a.get("number").and_then(Value::as_u64).unwrap_or_default(),
                str_of(a, "title"),
                str_of(a, "referenceType"),
                str_of(a, "state"),
                str_of(a, "url"),
            )
        })
        .collect();
    if !refs.is_empty() {
        text.push_str("\n\n<github_references>\n");
        text.push_str(&refs.join("\n"));
        text.push_str("\n</github_references>");
    }
    let mut parts = Vec::new();
    for a in attachments {
        let Some(id) = a.get("assetId").and_then(Value::as_str) else {
            continue;
        };
        let name = a.get("displayName").and_then(Value::as_str);
        let Some(found) = asset(id) else {
            parts.push(ContentPart::Text(format!(
                "[attachment {} is not available: its bytes are not in the session]",
                name.unwrap_or(id)
            )));
            continue;
        };
        // Assets are shared by content: the same bytes may come with another type elsewhere,
        // so the attachment's own type decides how they are shown.
        let bytes = Asset {
            mime_type: a
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or(found.mime_type),
            data: found.data,
        };
        match kind(a) {
            "file" => {
                parts.push(ContentPart::Text(format!(
                    "Image file at path {}",
                    str_of(a, "path")
                )));
                parts.push(image_part(bytes));
            }
            "blob" if is_image_mime(bytes.mime_type) => {
                parts.push(ContentPart::Text(
                    name.unwrap_or("Attached image").to_owned(),
                ));
                parts.push(image_part(bytes));
            }
            "blob" if is_text_mime(bytes.mime_type) => {
                let decoded = BASE64.decode(bytes.data).unwrap_or_default();
                parts.push(ContentPart::Text(format!(
                    "<attachment mimeType=\"{}\" name=\"{}\">\n{}\n</attachment>",
                    bytes.mime_type,
                    name.unwrap_or("Attached text"),
                    String::from_utf8_lossy(&decoded)
                )));
            }
            // A document: its name, then its bytes for an API that reads documents (the
            // others send the name only).
            "blob" if is_document_mime(bytes.mime_type) => {
                let title = name.unwrap_or("Attached document").to_owned();
                parts.push(ContentPart::Text(title.clone()));
                parts.push(ContentPart::Document {
                    media_type: bytes.mime_type.to_owned(),
                    data: bytes.data.to_owned(),
                    title,
                });
            }
            _ => {}
        }
    }
    (text, parts)
}

fn image_part(asset: Asset<'_>) -> ContentPart {
    ContentPart::ImageUrl(format!("data:{};base64,{}", asset.mime_type, asset.data))
}

fn kind(a: &Value) -> &str {
    a.get("type").and_then(Value::as_str).unwrap_or_default()
}

fn str_of<'v>(a: &'v Value, key: &str) -> &'v str {
    a.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// `image/*`.
pub(crate) fn is_image_mime(mime: &str) -> bool {
    mime.to_ascii_lowercase().starts_with("image/")
}

/// Types whose bytes are text the model reads inline.
pub(crate) fn is_text_mime(mime: &str) -> bool {
    let m = mime.to_ascii_lowercase();
    let m = m.split(';').next().unwrap_or_default().trim();
    m.starts_with("text/")
        || m.ends_with("+json")
        || m.ends_with("+xml")
        || matches!(
            m,
            "application/json"
                | "application/xml"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/javascript"
                | "application/x-sh"
        )
}

fn is_document_mime(mime: &str) -> bool {
    mime.eq_ignore_ascii_case("application/pdf")
}

/// Whether a blob of this type reaches the model in any form.
pub(crate) fn is_sent(mime: &str) -> bool {
    is_image_mime(mime) || is_text_mime(mime) || is_document_mime(mime)
}

/// The image type the bytes start with, if any (a file's name can lie about it).
pub(crate) fn sniff_image(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

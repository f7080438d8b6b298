//! Preparing a message's attachments at send time: resolve and confine paths, freeze each
//! file's `<tagged_files>` line, intern native bytes (images, blobs) as assets, and build the
//! text that joins the prompt.

use std::io::Read;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use turnstile_journal::payload::SessionBinaryAsset;

use super::inspect::{self, io_reason};
use super::render::{is_image_mime, sniff_image};
use super::{Attachment, SelectionRange};
use turnstile_tools::{ToolContext, paths};

/// Attachments taken from one message; later ones are left out with a warning.
pub const MAX_ATTACHMENTS: usize = 50;
/// Decoded bytes of one blob or attached image sent natively (larger ones are omitted).
pub const MAX_ASSET_BYTES: u64 = 20 * 1024 * 1024;
/// Decoded bytes of all the assets of one message.
pub const MAX_MESSAGE_ASSET_BYTES: u64 = 50 * 1024 * 1024;
/// Bytes of a selection's text shown to the model; the rest is cut with a note.
pub const MAX_SELECTION_BYTES: usize = 1024 * 1024;

/// The reminder the Copilot CLI adds after a prompt whose attachments include images.
const IMAGE_REMINDER: &str = "<system_reminder>\nThe user mentioned images and they have been \
                              attached to this message in the order they were mentioned.\n\
                              </system_reminder>";

/// What preparing gave.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prepared {
    /// The `user.message` `attachments`, as recorded.
    pub recorded: Vec<Value>,
    /// `session.binary_asset` payloads to record before the `user.message`.
    pub assets: Vec<SessionBinaryAsset>,
    /// Text before the prompt (`<ide_selection>` blocks).
    pub before_prompt: String,
    /// Text after the prompt (the image reminder).
    pub after_prompt: String,
    /// Problems worth a `session.warning` (the message still goes out).
    pub warnings: Vec<String>,
}

impl Prepared {
    /// The prompt as the model reads it (the `user.message` `transformedContent`).
    pub fn transform(&self, prompt: &str) -> String {
        format!("{}{prompt}{}", self.before_prompt, self.after_prompt)
    }
}

/// Prepares `attachments` for a session working in `cwd`; paths outside it are refused (in the
/// tagged line the model sees and in a warning) unless `allow_outside_cwd`.
pub fn prepare(attachments: &[Attachment], cwd: &Path, allow_outside_cwd: bool) -> Prepared {
    let mut out = Prepared::default();
    let mut ctx = ToolContext::new(cwd);
    ctx.allow_outside_cwd = allow_outside_cwd;
    let mut asset_bytes = 0u64;
    let mut images = 0usize;
    if attachments.len() > MAX_ATTACHMENTS {
        out.warnings.push(format!(
            "{} attachments were sent; only the first {MAX_ATTACHMENTS} are used",
            attachments.len()
        ));
    }
    for (index, attachment) in attachments.iter().take(MAX_ATTACHMENTS).enumerate() {
        let n = index + 1;
        match attachment {
            Attachment::File {
                path,
                display_name,
                line_range,
            } => {
                let mut rec = record_of(attachment);
                let resolved = match paths::resolve(path, &ctx) {
                    Ok(p) => p,
                    Err(failure) => {
                        let shown = paths::normalize(&paths::working_dir(&ctx).join(path));
                        rec.insert("path".into(), json!(shown.display().to_string()));
                        default_name(&mut rec, display_name, &shown);
                        let entry = format!("* {} (error: {})", shown.display(), failure.message);
                        out.warnings
                            .push(format!("attachment {n} ({path}): {}", failure.message));
                        rec.insert("taggedFilesEntry".into(), json!(entry));
                        out.recorded.push(Value::Object(rec));
                        continue;
                    }
                };
                rec.insert("path".into(), json!(resolved.display().to_string()));
                default_name(&mut rec, display_name, &resolved);
                if let Some(asset) = image_file(&resolved, &mut asset_bytes, &mut out.warnings, n) {
                    rec.insert("mimeType".into(), json!(asset.mime_type));
                    rec.insert("assetId".into(), json!(asset.asset_id));
                    rec.insert("byteLength".into(), json!(asset.byte_length));
                    out.assets.push(asset);
                    images += 1;
                } else {
                    let entry = inspect::tagged_entry(&resolved, *line_range);
                    if entry.contains("(error: ") {
                        out.warnings
                            .push(format!("attachment {n}: {}", &entry[2..]));
                    }
                    rec.insert("taggedFilesEntry".into(), json!(entry));
                }
                out.recorded.push(Value::Object(rec));
            }
            Attachment::Directory { path, display_name } => {
                let mut rec = record_of(attachment);
                let entry = match paths::resolve(path, &ctx) {
                    Ok(resolved) => {
                        rec.insert("path".into(), json!(resolved.display().to_string()));
                        default_name(&mut rec, display_name, &resolved);
                        inspect::tagged_entry(&resolved, None)
                    }
                    Err(failure) => {
                        let shown = paths::normalize(&paths::working_dir(&ctx).join(path));
                        rec.insert("path".into(), json!(shown.display().to_string()));
                        default_name(&mut rec, display_name, &shown);
                        format!("* {} (error: {})", shown.display(), failure.message)
                    }
                };
                if entry.contains("(error: ") {
                    out.warnings
                        .push(format!("attachment {n}: {}", &entry[2..]));
                }
                rec.insert("taggedFilesEntry".into(), json!(entry));
                out.recorded.push(Value::Object(rec));
            }
            Attachment::Selection {
                file_path,
                selection,
                text,
                ..
            } => {
                let mut rec = record_of(attachment);
                // The schema requires both; an editor that sent neither selected nothing.
                rec.entry("text").or_insert_with(|| json!(""));
                rec.entry("selection").or_insert_with(
                    || json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}),
                );
                out.recorded.push(Value::Object(rec));
                let text = text.as_deref().unwrap_or_default();
                out.before_prompt.push_str(&selection_block(
                    &shown_path(file_path, cwd),
                    selection.as_ref(),
                    text,
                ));
            }
            Attachment::Blob {
                data,
                mime_type,
                display_name,
            } => {
                let mut rec = Map::new();
                rec.insert("type".into(), json!("blob"));
                if let Some(name) = display_name {
                    rec.insert("displayName".into(), json!(name));
                }
                rec.insert("mimeType".into(), json!(mime_type));
                let what = display_name.as_deref().unwrap_or(mime_type);
                match intern_blob(data, mime_type, asset_bytes) {
                    Ok(asset) => {
                        asset_bytes += asset.byte_length;
                        if is_image_mime(mime_type) {
                            images += 1;
                        } else if !super::render::is_sent(mime_type) {
                            out.warnings.push(format!(
                                "attachment {n} ({what}): {mime_type} content is not sent to the model"
                            ));
                        }
                        rec.insert("assetId".into(), json!(asset.asset_id));
                        rec.insert("byteLength".into(), json!(asset.byte_length));
                        out.assets.push(asset);
                    }
                    Err(BlobProblem::TooLarge(len)) => {
                        rec.insert("byteLength".into(), json!(len));
                        rec.insert("omittedReason".into(), json!("too_large"));
                        out.warnings.push(format!(
                            "attachment {n} ({what}): {len} bytes is more than the {} allowed; it is not sent",
                            if len > MAX_ASSET_BYTES { MAX_ASSET_BYTES } else { MAX_MESSAGE_ASSET_BYTES }
                        ));
                    }
                    Err(BlobProblem::NotBase64) => out.warnings.push(format!(
                        "attachment {n} ({what}): data is not valid base64; it is not sent"
                    )),
                }
                out.recorded.push(Value::Object(rec));
            }
            Attachment::GithubReference { .. } => {
                out.recorded.push(Value::Object(record_of(attachment)))
            }
        }
    }
    if images > 0 {
        out.after_prompt = format!("\n\n{IMAGE_REMINDER}");
    }
    out
}

/// The attachment as sent, as a JSON object.
fn record_of(attachment: &Attachment) -> Map<String, Value> {
    match serde_json::to_value(attachment) {
        Ok(Value::Object(map)) => map,
        // Every variant serializes to an object.
        _ => Map::new(),
    }
}

fn default_name(rec: &mut Map<String, Value>, given: &Option<String>, path: &Path) {
    if given.is_none() {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        rec.insert("displayName".into(), json!(name));
    }
}

/// A path as the selection block names it: relative to the working directory when inside it.
fn shown_path(file_path: &str, cwd: &Path) -> String {
    let abs = paths::normalize(
        &std::path::absolute(cwd)
            .unwrap_or_else(|_| cwd.to_path_buf())
            .join(file_path),
    );
    let base = paths::normalize(&std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf()));
    match abs.strip_prefix(&base) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => abs.display().to_string(),
    }
}

/// The `<ide_selection>` block, worded as the Copilot CLI words it.
fn selection_block(path: &str, range: Option<&SelectionRange>, text: &str) -> String {
    let lines = match range {
        Some(r) if r.start.line == r.end.line => format!(" (line {})", r.start.line + 1),
        Some(r) => format!(" (lines {}-{})", r.start.line + 1, r.end.line + 1),
        None => String::new(),
    };
    let shown = if text.len() > MAX_SELECTION_BYTES {
        let mut cut = MAX_SELECTION_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        format!(
            "{}\n[selection cut at {MAX_SELECTION_BYTES} bytes]",
            &text[..cut]
        )
    } else {
        text.to_owned()
    };
    format!(
        "<ide_selection>\nThe user has the following text selected in their IDE. This may or may \
         not be related to their request.\nFile: {path}{lines}\n```\n{shown}\n```\n</ide_selection>\n\n"
    )
}

/// An attached file that is an image (by name), read and interned; `None` for other files and
/// for images that cannot be sent (they are listed as tagged files instead).
fn image_file(
    path: &Path,
    asset_bytes: &mut u64,
    warnings: &mut Vec<String>,
    n: usize,
) -> Option<SessionBinaryAsset> {
    let ext = path.extension()?.to_string_lossy().to_ascii_lowercase();
    let by_name = match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    };
    let meta = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
    if meta.len() > MAX_ASSET_BYTES || *asset_bytes + meta.len() > MAX_MESSAGE_ASSET_BYTES {
        warnings.push(format!(
            "attachment {n}: image {} is too large to send ({} bytes)",
            path.display(),
            meta.len()
        ));
        return None;
    }
    let mut bytes = Vec::new();
    let read =
        std::fs::File::open(path).and_then(|f| f.take(MAX_ASSET_BYTES + 1).read_to_end(&mut bytes));
    if let Err(e) = read {
        warnings.push(format!(
            "attachment {n}: {}: {}",
            path.display(),
            io_reason(&e)
        ));
        return None;
    }
    if bytes.len() as u64 > MAX_ASSET_BYTES {
        return None;
    }
    let mime = sniff_image(&bytes).unwrap_or(by_name);
    *asset_bytes += bytes.len() as u64;
    Some(asset_of(&bytes, mime))
}

enum BlobProblem {
    TooLarge(u64),
    NotBase64,
}

fn intern_blob(data: &str, mime: &str, used: u64) -> Result<SessionBinaryAsset, BlobProblem> {
    // Judge the size from the text first: a huge blob is never decoded.
    let estimate = (data.len() as u64 / 4) * 3;
    if estimate > MAX_ASSET_BYTES + 3 || used + estimate > MAX_MESSAGE_ASSET_BYTES + 3 {
        return Err(BlobProblem::TooLarge(estimate));
    }
    let bytes = BASE64
        .decode(data.trim())
        .map_err(|_| BlobProblem::NotBase64)?;
    if bytes.len() as u64 > MAX_ASSET_BYTES || used + bytes.len() as u64 > MAX_MESSAGE_ASSET_BYTES {
        return Err(BlobProblem::TooLarge(bytes.len() as u64));
    }
    Ok(asset_of(&bytes, mime))
}

fn asset_of(bytes: &[u8], mime: &str) -> SessionBinaryAsset {
    let digest = Sha256::digest(bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    SessionBinaryAsset {
        asset_id: format!("sha256:{hex}"),
        asset_type: if is_image_mime(mime) {
            "image"
        } else {
            "resource"
        }
        .into(),
        mime_type: mime.to_owned(),
        byte_length: bytes.len() as u64,
        data: BASE64.encode(bytes),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::attachments::{Asset, LineRange, Position, model_content};
    use turnstile_providers::ContentPart;

    /// A 1x1 PNG.
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc`\0\0\0\x02\0\0\x01\xe2!\xbc3\0\0\0\0IEND\xaeB`\x82";

    fn render(p: &Prepared, prompt: &str) -> (String, Vec<ContentPart>) {
        model_content(&p.transform(prompt), &p.recorded, |id| {
            p.assets.iter().find(|a| a.asset_id == id).map(|a| Asset {
                mime_type: &a.mime_type,
                data: &a.data,
            })
        })
    }

    #[test]
    fn files_directories_selections_and_references_render_as_the_runtime_does() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::fs::write(cwd.join("notes.txt"), "line one\nline two\n").unwrap();
        std::fs::create_dir_all(cwd.join("sub")).unwrap();
        std::fs::write(cwd.join("sub/a.txt"), "a\n").unwrap();
        std::fs::write(cwd.join("sub/b.txt"), "b\n").unwrap();
        let attachments = vec![
            Attachment::File {
                path: "notes.txt".into(),
                display_name: None,
                line_range: None,
            },
            Attachment::Directory {
                path: cwd.join("sub").display().to_string(),
                display_name: Some("sub".into()),
            },
            Attachment::Selection {
                file_path: cwd.join("sub/a.txt").display().to_string(),
                display_name: "a.txt:1".into(),
                selection: Some(SelectionRange {
                    start: Position {
                        line: 1,
                        character: 0,
                    },
                    end: Position {
                        line: 2,
                        character: 4,
                    },
                }),
                text: Some("line one\nline".into()),
            },
            Attachment::GithubReference {
                number: 7,
                title: "A bug".into(),
                reference_type: "issue".into(),
                state: "open".into(),
                url: "https://github.com/o/r/issues/7".into(),
            },
        ];
        let p = prepare(&attachments, cwd, false);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        assert!(p.assets.is_empty());
        let (text, parts) = render(&p, "Please do it");
        let c = cwd.display();
        assert_eq!(
            text,
            format!(
                "<ide_selection>\nThe user has the following text selected in their IDE. This may \
                 or may not be related to their request.\nFile: sub/a.txt (lines 2-3)\n```\nline \
                 one\nline\n```\n</ide_selection>\n\nPlease do it\n\n<tagged_files>\n* {c}/notes.txt \
                 (3 lines)\n* {c}/sub (2 items)\n</tagged_files>\n\n<github_references>\n#7 - A bug \
                 [issue] [open] (https://github.com/o/r/issues/7)\n</github_references>"
            )
        );
        assert!(parts.is_empty());
        // The record keeps the absolute path, a display name and the frozen tagged line.
        assert_eq!(p.recorded[0]["path"], format!("{c}/notes.txt"));
        assert_eq!(p.recorded[0]["displayName"], "notes.txt");
        assert_eq!(
            p.recorded[0]["taggedFilesEntry"],
            format!("* {c}/notes.txt (3 lines)")
        );
        // Later changes to the file do not change what the model is shown.
        std::fs::write(cwd.join("notes.txt"), "changed").unwrap();
        assert_eq!(render(&p, "Please do it").0, text);
    }

    #[test]
    fn missing_and_outside_paths_are_told_to_the_model_and_warned_about() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "s\n").unwrap();
        let attachments = vec![
            Attachment::File {
                path: "nope.txt".into(),
                display_name: None,
                line_range: None,
            },
            Attachment::File {
                path: outside.path().join("secret.txt").display().to_string(),
                display_name: None,
                line_range: Some(LineRange { start: 1, end: 1 }),
            },
            Attachment::Directory {
                path: "../".into(),
                display_name: None,
            },
        ];
        let p = prepare(&attachments, dir.path(), false);
        assert_eq!(p.warnings.len(), 3, "{:?}", p.warnings);
        let (text, _) = render(&p, "x");
        assert!(
            text.contains("nope.txt (error: no such file or directory)"),
            "{text}"
        );
        assert!(text.contains("secret.txt (error: Path "), "{text}");
        assert!(text.contains("is outside the working directory"), "{text}");
        assert!(!text.contains("(1 lines)"));
        // Allowed outside, the same file is counted.
        let p = prepare(&attachments[1..2], dir.path(), true);
        assert!(render(&p, "x").0.contains("secret.txt (line 1 of 2 lines)"));
    }

    #[test]
    fn images_become_image_parts_and_are_interned_once() {
        let dir = tempfile::tempdir().unwrap();
        // Named .JPG, but the bytes are a PNG: the bytes decide the type.
        std::fs::write(dir.path().join("dot.JPG"), PNG).unwrap();
        let data = BASE64.encode(PNG);
        let attachments = vec![
            Attachment::File {
                path: "dot.JPG".into(),
                display_name: None,
                line_range: None,
            },
            Attachment::Blob {
                data: data.clone(),
                mime_type: "image/png".into(),
                display_name: Some("dot.png".into()),
            },
            Attachment::Blob {
                data: BASE64.encode("hello text"),
                mime_type: "text/plain".into(),
                display_name: None,
            },
            Attachment::Blob {
                data: BASE64.encode([0u8, 1, 2]),
                mime_type: "application/octet-stream".into(),
                display_name: Some("bin".into()),
            },
            Attachment::Blob {
                data: "not base64!!".into(),
                mime_type: "image/png".into(),
                display_name: None,
            },
        ];
        let p = prepare(&attachments, dir.path(), false);
        assert_eq!(p.assets.len(), 4);
        assert_eq!(
            p.assets[0].asset_id, p.assets[1].asset_id,
            "content addressed"
        );
        assert_eq!(p.assets[0].mime_type, "image/png");
        assert_eq!(p.assets[0].asset_type, "image");
        assert_eq!(p.assets[2].asset_type, "resource");
        assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
        assert!(p.warnings[0].contains("not sent to the model"));
        assert!(p.warnings[1].contains("not valid base64"));
        // The record holds references, never the bytes.
        assert!(p.recorded.iter().all(|r| r.get("data").is_none()));
        assert_eq!(p.recorded[0]["assetId"], p.assets[0].asset_id);
        assert!(p.recorded[0].get("taggedFilesEntry").is_none());
        let (text, parts) = render(&p, "look");
        assert_eq!(
            text,
            "look\n\n<system_reminder>\nThe user mentioned images and they have been attached to \
             this message in the order they were mentioned.\n</system_reminder>"
        );
        let url = format!("data:image/png;base64,{data}");
        assert_eq!(
            parts,
            vec![
                ContentPart::Text(format!("Image file at path {}/dot.JPG", dir.path().display())),
                ContentPart::ImageUrl(url.clone()),
                ContentPart::Text("dot.png".into()),
                ContentPart::ImageUrl(url),
                ContentPart::Text(
                    "<attachment mimeType=\"text/plain\" name=\"Attached text\">\nhello text\n</attachment>"
                        .into()
                ),
            ]
        );
        // Without the recorded bytes (a truncated journal), the model is told so.
        let (_, parts) = model_content("x", &p.recorded[..1], |_| None);
        assert!(matches!(&parts[0], ContentPart::Text(t) if t.contains("not available")));
    }

    #[test]
    fn oversized_blobs_are_refused_without_decoding() {
        let dir = tempfile::tempdir().unwrap();
        let huge = "A".repeat((MAX_ASSET_BYTES as usize / 3 + 10) * 4);
        let attachments = vec![Attachment::Blob {
            data: huge,
            mime_type: "image/png".into(),
            display_name: Some("big.png".into()),
        }];
        let p = prepare(&attachments, dir.path(), false);
        assert!(p.assets.is_empty());
        assert_eq!(p.recorded[0]["omittedReason"], "too_large");
        assert!(p.warnings[0].contains("big.png"), "{:?}", p.warnings);
        assert!(p.after_prompt.is_empty(), "no image reached the model");
    }

    #[test]
    fn too_many_attachments_are_cut_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let one = Attachment::Directory {
            path: ".".into(),
            display_name: None,
        };
        let p = prepare(&vec![one; MAX_ATTACHMENTS + 5], dir.path(), false);
        assert_eq!(p.recorded.len(), MAX_ATTACHMENTS);
        assert!(p.warnings[0].contains("only the first"));
    }
}

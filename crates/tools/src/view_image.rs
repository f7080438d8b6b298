//! `view` of an image: the model gets the picture, not its bytes as text. The Copilot CLI
//! answers `Viewed image file successfully.` and sends the image (base64, with its media type
//! and `Image file at path PATH`) as `result.binaryResultsForLlm`, which the session puts in
//! a user message after the tool results.
//!
//! An image is known by its first bytes (PNG, JPEG, GIF, WebP), whatever the file's name. One
//! larger than [`MAX_IMAGE_BYTES`] is refused: the picture goes into the journal and into
//! every later request, base64 (4/3 of its size).

use std::fs;
use std::io::Read;
use std::path::Path;

use base64::Engine;

use super::{BinaryResult, ToolFailure, ToolOutput, io_failure};

/// The largest image `view` sends the model (`docs/security.md`, Bounds).
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// Bytes enough to recognise every image format below.
pub(crate) const SNIFF_BYTES: usize = 12;

/// The media type of an image whose file starts with `head`, if it is one the model reads.
pub(crate) fn image_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The media type of the image at `path`, when it is one (a file that cannot be read is left
/// to the text view to report).
pub(crate) fn sniff(path: &Path) -> Option<&'static str> {
    let mut head = [0u8; SNIFF_BYTES];
    let mut file = fs::File::open(path).ok()?;
    let mut filled = 0;
    while filled < head.len() {
        match file.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    image_type(&head[..filled])
}

/// The result of viewing the image at `path` (`shown_as`: the path as the model named it,
/// resolved).
pub(crate) fn view_image(
    path: &Path,
    shown_as: &str,
    mime_type: &str,
) -> Result<ToolOutput, ToolFailure> {
    let file = fs::File::open(path).map_err(|e| io_failure("open", path, &e))?;
    let mut bytes = Vec::new();
    // Read one byte past the bound so a file that grew since it was measured is refused too.
    file.take(MAX_IMAGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_failure("read", path, &e))?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(ToolFailure::new(
            format!(
                "Image file {shown_as} is larger than the {} MiB view sends the model.",
                MAX_IMAGE_BYTES >> 20
            ),
            "too_large",
        ));
    }
    let description = format!("Image file at path {shown_as}");
    Ok(ToolOutput {
        content: "Viewed image file successfully.".to_owned(),
        detailed_content: Some(format!("Viewed image file at path {shown_as}")),
        binary_results: vec![BinaryResult {
            data: base64::engine::general_purpose::STANDARD.encode(&bytes),
            mime_type: mime_type.to_owned(),
            description,
        }],
        ..ToolOutput::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 1x1 PNG the official clients' suite attaches.
    const PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

    #[test]
    fn images_are_known_by_their_first_bytes() {
        let png = base64::engine::general_purpose::STANDARD
            .decode(PIXEL_PNG)
            .unwrap();
        assert_eq!(image_type(&png), Some("image/png"));
        assert_eq!(image_type(&[0xff, 0xd8, 0xff, 0xe0]), Some("image/jpeg"));
        assert_eq!(image_type(b"GIF89a\x01\x00"), Some("image/gif"));
        assert_eq!(
            image_type(b"RIFF\x10\x00\x00\x00WEBPVP8 "),
            Some("image/webp")
        );
        assert_eq!(image_type(b"RIFF\x10\x00\x00\x00WAVEfmt "), None);
        assert_eq!(image_type(b"\x89PN"), None);
        assert_eq!(image_type(b"hello, world"), None);
    }

    #[test]
    fn an_image_goes_to_the_model_whole_and_a_large_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pixel.png");
        let png = base64::engine::general_purpose::STANDARD
            .decode(PIXEL_PNG)
            .unwrap();
        fs::write(&path, &png).unwrap();
        let shown = path.display().to_string();
        assert_eq!(sniff(&path), Some("image/png"));
        let out = view_image(&path, &shown, "image/png").unwrap();
        assert_eq!(out.content, "Viewed image file successfully.");
        assert_eq!(
            out.detailed_content.as_deref(),
            Some(format!("Viewed image file at path {shown}").as_str())
        );
        assert_eq!(
            out.binary_results,
            vec![BinaryResult {
                data: PIXEL_PNG.to_owned(),
                mime_type: "image/png".to_owned(),
                description: format!("Image file at path {shown}"),
            }]
        );

        let big = dir.path().join("big.png");
        let mut bytes = png.clone();
        bytes.resize(MAX_IMAGE_BYTES as usize + 1, 0);
        fs::write(&big, &bytes).unwrap();
        let refused = view_image(&big, "big.png", "image/png").unwrap_err();
        assert_eq!(refused.code.as_deref(), Some("too_large"));
    }
}

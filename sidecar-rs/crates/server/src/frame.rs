//! Length-prefixed frames: a u32 big-endian body length, then the body.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Read buffers grow as bytes arrive instead of trusting the prefix up front, so a hostile
/// prefix just under the limit followed by silence costs at most this much.
const INITIAL_BODY_CAPACITY: usize = 64 * 1024;

/// Why no frame came out of the stream.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameError {
    /// The prefix announces more than the limit; the stream cannot be trusted any more.
    #[error("frame of {len} bytes is larger than the limit of {max} bytes")]
    TooLarge {
        /// The announced length.
        len: u32,
        /// `--max-frame-bytes`.
        max: u32,
    },
    /// The peer closed the stream in the middle of a frame.
    #[error("connection closed mid-frame")]
    Truncated,
    /// Reading failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Reads one frame body. `Ok(None)` is a clean end of stream between frames.
pub(crate) async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    max: u32,
) -> Result<Option<Vec<u8>>, FrameError> {
    let mut prefix = [0u8; 4];
    let mut filled = 0;
    while filled < prefix.len() {
        match reader.read(&mut prefix[filled..]).await? {
            0 if filled == 0 => return Ok(None),
            0 => return Err(FrameError::Truncated),
            n => filled += n,
        }
    }
    let len = u32::from_be_bytes(prefix);
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    let len = len as usize;
    let mut body = Vec::with_capacity(len.min(INITIAL_BODY_CAPACITY));
    let read = reader.take(len as u64).read_to_end(&mut body).await?;
    if read < len {
        return Err(FrameError::Truncated);
    }
    Ok(Some(body))
}

/// Writes `body` as one frame.
pub(crate) async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    body: &[u8],
) -> std::io::Result<()> {
    let len = u32::try_from(body.len()).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "response larger than 4 GiB",
        )
    })?;
    writer.write_all(&len.to_be_bytes()).await?;
    writer.write_all(body).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn round_trips_and_detects_truncation() {
        let mut wire = Vec::new();
        write_frame(&mut wire, b"hello").await.unwrap();
        write_frame(&mut wire, b"").await.unwrap();
        let mut r = &wire[..];
        assert_eq!(read_frame(&mut r, 16).await.unwrap().unwrap(), b"hello");
        assert_eq!(read_frame(&mut r, 16).await.unwrap().unwrap(), b"");
        assert!(read_frame(&mut r, 16).await.unwrap().is_none());

        let mut r = &wire[..7];
        assert!(matches!(
            read_frame(&mut r, 16).await,
            Err(FrameError::Truncated)
        ));
        let mut r = &wire[..2];
        assert!(matches!(
            read_frame(&mut r, 16).await,
            Err(FrameError::Truncated)
        ));
        let mut r = &wire[..];
        assert!(matches!(
            read_frame(&mut r, 4).await,
            Err(FrameError::TooLarge { len: 5, max: 4 })
        ));
    }
}

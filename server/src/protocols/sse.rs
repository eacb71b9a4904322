//! Server-sent events, both ways: an incremental reader that turns an
//! upstream byte stream into events as soon as each is complete (chunks
//! may split an event anywhere, even inside a UTF-8 character), and the
//! frame writer for the client side.

use bytes::{Bytes, BytesMut};

/// One event: its `event:` name (if any) and its `data:` lines joined by
/// newlines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

/// Longest event kept while waiting for its end; a longer one is an
/// upstream fault, not something to buffer without bound.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("an upstream stream event exceeded {MAX_EVENT_BYTES} bytes")]
pub struct EventTooLarge;

#[derive(Default)]
pub struct SseReader {
    buf: BytesMut,
    event: Option<String>,
    data: Vec<String>,
    has_data: bool,
}

impl SseReader {
    /// Feeds a chunk; returns every event it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, EventTooLarge> {
        let mut out = Vec::new();
        self.feed_each(chunk, |ev, _| out.push(ev))?;
        Ok(out)
    }

    /// Feeds a chunk; hands `each` every event it completed, with how many
    /// of the chunk's bytes it took up to that event's end (so a reader
    /// can cut the chunk right after an event).
    pub fn feed_each(&mut self, chunk: &[u8], mut each: impl FnMut(SseEvent, usize)) -> Result<(), EventTooLarge> {
        // What is left of earlier chunks holds no line end: every line
        // end found here lies in `chunk`.
        let carried = self.buf.len();
        self.buf.extend_from_slice(chunk);
        let mut taken = 0;
        while let Some(end) = self.buf.iter().position(|b| *b == b'\n') {
            let line = self.buf.split_to(end + 1);
            taken += end + 1;
            let line = line.strip_suffix(b"\n").unwrap_or(&line);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if let Some(ev) = self.line(&String::from_utf8_lossy(line)) {
                each(ev, taken - carried);
            }
        }
        if self.buf.len() + self.data.iter().map(String::len).sum::<usize>() > MAX_EVENT_BYTES {
            return Err(EventTooLarge);
        }
        Ok(())
    }

    /// The end of the stream: an event without its blank line still counts.
    pub fn finish(&mut self) -> Option<SseEvent> {
        if !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
            if let Some(ev) = self.line(&String::from_utf8_lossy(&rest)) {
                return Some(ev);
            }
        }
        self.take()
    }

    /// Reads one line; a blank line completes the event it ends.
    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.take();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = line.split_once(':').map_or((line, ""), |(f, v)| (f, v.strip_prefix(' ').unwrap_or(v)));
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => {
                self.data.push(value.to_owned());
                self.has_data = true;
            }
            _ => {}
        }
        None
    }

    fn take(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        Some(SseEvent { event, data: std::mem::take(&mut self.data).join("\n") })
    }
}

/// `event: <name>\ndata: <data>\n\n` (the name only when given).
pub fn frame(event: Option<&str>, data: &str) -> Bytes {
    let mut out = String::with_capacity(data.len() + 32);
    if let Some(e) = event {
        out.push_str("event: ");
        out.push_str(e);
        out.push('\n');
    }
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent { event: event.map(str::to_owned), data: data.to_owned() }
    }

    #[test]
    fn events_split_anywhere_come_out_whole() {
        let stream = "event: message_start\ndata: {\"a\":1}\n\n: keep-alive\n\ndata: line one\r\ndata: line two\r\n\r\ndata: é\n\n";
        let expected = vec![ev(Some("message_start"), "{\"a\":1}"), ev(None, "line one\nline two"), ev(None, "é")];
        for split in 1..stream.len() {
            let bytes = stream.as_bytes();
            let mut r = SseReader::default();
            let mut got = r.feed(&bytes[..split]).unwrap();
            got.extend(r.feed(&bytes[split..]).unwrap());
            assert_eq!(got, expected, "split at {split}");
            assert_eq!(r.finish(), None);
        }
    }

    #[test]
    fn a_last_event_without_its_blank_line_still_counts() {
        let mut r = SseReader::default();
        assert!(r.feed(b"data: [DONE]").unwrap().is_empty());
        assert_eq!(r.finish(), Some(ev(None, "[DONE]")));
    }

    #[test]
    fn each_event_says_how_much_of_its_chunk_it_took() {
        let mut r = SseReader::default();
        let mut ends = Vec::new();
        r.feed_each(b"data: a", |_, n| ends.push(n)).unwrap();
        assert!(ends.is_empty(), "half an event takes nothing yet");
        let rest = b"\n\n: ping\n\ndata: b\n\ndata: c";
        r.feed_each(rest, |_, n| ends.push(n)).unwrap();
        assert_eq!(ends, vec![2, 19], "through the blank line after `a` (carried over), then after `b`");
        assert_eq!(&rest[..19], b"\n\n: ping\n\ndata: b\n\n");
    }

    #[test]
    fn an_endless_event_is_refused() {
        let mut r = SseReader::default();
        let big = vec![b'x'; MAX_EVENT_BYTES + 1];
        assert_eq!(r.feed(&big), Err(EventTooLarge));
    }

    #[test]
    fn frames_carry_multi_line_data() {
        assert_eq!(frame(Some("ping"), "{}"), Bytes::from("event: ping\ndata: {}\n\n"));
        assert_eq!(frame(None, "a\nb"), Bytes::from("data: a\ndata: b\n\n"));
        let mut r = SseReader::default();
        assert_eq!(r.feed(&frame(Some("x"), "a\nb")).unwrap(), vec![ev(Some("x"), "a\nb")]);
    }
}

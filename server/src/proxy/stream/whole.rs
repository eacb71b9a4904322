//! Whole events only: an upstream chunk may end inside an event (a line
//! cut anywhere, a 2 MB line still arriving, a stream framed by bare
//! carriage returns). The client gets a chunk's bytes up to the end of its
//! last complete event; the rest waits for the chunk that completes it. So
//! a stream that breaks or turns to garbage mid-event never hands the
//! client half an event followed by the error event — it gets whole events,
//! then the error event. Chunks that end on an event boundary, the usual
//! case, pass without a copy.

use bytes::{Bytes, BytesMut};

/// The bytes of an event still arriving.
#[derive(Default)]
pub struct WholeEvents {
    partial: BytesMut,
}

impl WholeEvents {
    /// What of `chunk` may go to the client: through `through` (the end of
    /// its last complete event, as the watch saw it), after what earlier
    /// chunks left unfinished; `None` keeps it all for later.
    pub fn cut(&mut self, chunk: Bytes, through: Option<usize>) -> Bytes {
        let Some(n) = through else {
            self.partial.extend_from_slice(&chunk);
            return Bytes::new();
        };
        let (head, tail) = (chunk.slice(..n), chunk.slice(n..));
        let out = if self.partial.is_empty() {
            head
        } else {
            let mut joined = std::mem::take(&mut self.partial);
            joined.extend_from_slice(&head);
            joined.freeze()
        };
        self.partial.extend_from_slice(&tail);
        out
    }

    /// The unfinished event the stream closed on, with the blank line that
    /// ends it (an upstream may omit it after its last event); empty when
    /// there is none.
    pub fn last(&mut self) -> Bytes {
        if self.partial.iter().all(u8::is_ascii_whitespace) {
            self.partial.clear();
            return Bytes::new();
        }
        let mut last = std::mem::take(&mut self.partial);
        while last.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            last.truncate(last.len() - 1);
        }
        last.extend_from_slice(b"\n\n");
        last.freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_chunks_pass_as_they_are_and_a_split_event_waits_for_its_end() {
        let mut w = WholeEvents::default();
        let a = Bytes::from_static(b"data: a\n\n");
        let out = w.cut(a.clone(), Some(a.len()));
        assert_eq!((out.as_ptr(), out.len()), (a.as_ptr(), a.len()), "no copy");
        assert_eq!(w.cut(Bytes::from_static(b"data: b\n\ndata: "), Some(9)), Bytes::from_static(b"data: b\n\n"));
        assert_eq!(w.cut(Bytes::from_static(b"xxxx"), None), Bytes::new(), "still inside the event");
        assert_eq!(w.cut(Bytes::from_static(b"x\n\n"), Some(3)), Bytes::from_static(b"data: xxxxx\n\n"));
        assert_eq!(w.last(), Bytes::new());
    }

    #[test]
    fn an_unterminated_last_event_is_closed() {
        let mut w = WholeEvents::default();
        assert_eq!(w.cut(Bytes::from_static(b"data: [DONE]"), None), Bytes::new());
        assert_eq!(w.last(), Bytes::from_static(b"data: [DONE]\n\n"));
        assert_eq!(w.cut(Bytes::from_static(b"\n"), None), Bytes::new());
        assert_eq!(w.last(), Bytes::new(), "a stray line end is no event");
    }
}

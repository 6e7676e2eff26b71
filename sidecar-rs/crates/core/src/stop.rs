//! Stop strings over streamed text: text is released as soon as it cannot be the start of a
//! stop string, and generation ends before the first one that appears.

/// Holds back the tail of the generated text that could still grow into a stop string.
#[derive(Debug, Clone, Default)]
pub struct StopFilter {
    stops: Vec<String>,
    pending: String,
}

/// What [`StopFilter::push`] released.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Released {
    /// Text that is known not to be part of a stop string.
    pub text: String,
    /// A stop string appeared; `text` ends right before it and nothing more may be sent.
    pub stopped: bool,
}

impl StopFilter {
    /// A filter for `stops`; empty strings are ignored (they would match everywhere).
    pub fn new(stops: Vec<String>) -> Self {
        Self {
            stops: stops.into_iter().filter(|s| !s.is_empty()).collect(),
            pending: String::new(),
        }
    }

    /// Adds newly generated `text`.
    pub fn push(&mut self, text: &str) -> Released {
        self.pending.push_str(text);
        // Everything before `pending` was released only because no stop string could start
        // there, so the earliest match lies wholly inside `pending`.
        if let Some(at) = self
            .stops
            .iter()
            .filter_map(|stop| self.pending.find(stop.as_str()))
            .min()
        {
            let text = self.pending[..at].to_owned();
            self.pending.clear();
            return Released {
                text,
                stopped: true,
            };
        }
        let keep = self.longest_partial_match();
        let split = self.pending.len() - keep;
        let text = self.pending[..split].to_owned();
        self.pending.replace_range(..split, "");
        Released {
            text,
            stopped: false,
        }
    }

    /// Releases what was held back; called when generation ends for another reason.
    pub fn flush(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }

    /// Bytes at the end of `pending` that equal a proper prefix of some stop string. The
    /// suffix always starts on a character boundary because stop strings start with one.
    fn longest_partial_match(&self) -> usize {
        let pending = self.pending.as_bytes();
        self.stops
            .iter()
            .map(|stop| {
                let stop = stop.as_bytes();
                let longest = (stop.len() - 1).min(pending.len());
                (1..=longest)
                    .rev()
                    .find(|&n| pending[pending.len() - n..] == stop[..n])
                    .unwrap_or(0)
            })
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], pieces: &[&str]) -> (Vec<String>, bool, String) {
        let mut f = StopFilter::new(stops.iter().map(|s| (*s).to_owned()).collect());
        let mut out = Vec::new();
        for piece in pieces {
            let r = f.push(piece);
            out.push(r.text);
            if r.stopped {
                return (out, true, String::new());
            }
        }
        (out, false, f.flush())
    }

    #[test]
    fn passes_text_through_without_stops() {
        assert_eq!(
            run(&[], &["a", "b"]),
            (vec!["a".into(), "b".into()], false, String::new())
        );
    }

    #[test]
    fn holds_back_a_possible_prefix_and_releases_it_when_it_diverges() {
        let (out, stopped, rest) = run(&["END"], &["abcE", "N", "x"]);
        assert_eq!(out, vec!["abc", "", "ENx"]);
        assert!(!stopped);
        assert_eq!(rest, "");
    }

    #[test]
    fn stops_before_a_stop_split_across_pieces() {
        let (out, stopped, _) = run(&["END"], &["abcE", "N", "Dtail"]);
        assert_eq!(out, vec!["abc", "", ""]);
        assert!(stopped);
    }

    #[test]
    fn the_earliest_of_several_stops_wins() {
        let (out, stopped, _) = run(&["zz", "b"], &["a b zz"]);
        assert_eq!(out, vec!["a "]);
        assert!(stopped);
    }

    #[test]
    fn flush_releases_a_held_back_tail() {
        let (out, stopped, rest) = run(&["\n\n"], &["line\n"]);
        assert_eq!(out, vec!["line"]);
        assert!(!stopped);
        assert_eq!(rest, "\n");
    }

    #[test]
    fn multibyte_stops_hold_back_whole_characters() {
        let (out, stopped, rest) = run(&["é!"], &["café", "?"]);
        assert_eq!(out, vec!["caf", "é?"]);
        assert!(!stopped);
        assert_eq!(rest, "");
    }
}

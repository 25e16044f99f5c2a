//! What an operation says while it works, for its caller to render: library code does not
//! print. A source frame record could not read, a warning about the storage: each an [`Event`]
//! sent to the request's [`Events`], which the CLI writes to standard error and an embedder
//! may keep, show or drop.

use std::fmt;
use std::sync::Arc;

/// Something an operation says while it works.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// Something went wrong that the operation goes on past (a source frame it could not read,
    /// which becomes a drop), in one line naming the frame and the file.
    Warning(String),
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Warning(message) => f.write_str(message),
        }
    }
}

/// Where a request's events go: nowhere by default, or to the sink the caller gives.
#[derive(Clone, Default)]
pub struct Events {
    sink: Option<Arc<dyn Fn(Event) + Send + Sync>>,
}

impl Events {
    /// Events that go nowhere.
    pub fn none() -> Events {
        Events::default()
    }

    /// Events sent to `sink`, on whichever thread the operation says them.
    pub fn to(sink: impl Fn(Event) + Send + Sync + 'static) -> Events {
        Events { sink: Some(Arc::new(sink)) }
    }

    /// Sends a warning.
    pub fn warn(&self, message: impl Into<String>) {
        if let Some(sink) = &self.sink {
            sink(Event::Warning(message.into()));
        }
    }
}

impl fmt::Debug for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.sink.is_some() { "Events(sink)" } else { "Events(none)" })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn warnings_reach_the_sink_given_and_nowhere_by_default() {
        let said = Arc::new(Mutex::new(Vec::new()));
        let events = {
            let said = Arc::clone(&said);
            Events::to(move |event| said.lock().unwrap_or_else(|e| e.into_inner()).push(event.to_string()))
        };
        events.warn("source frame 3 (a.dpx): gone");
        Events::none().warn("lost");
        assert_eq!(*said.lock().unwrap_or_else(|e| e.into_inner()), ["source frame 3 (a.dpx): gone"]);
    }
}

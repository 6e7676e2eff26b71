//! Streaming generation against `/v1/completions` (a `prompt`) or `/v1/chat/completions`
//! (`messages`), as a [`Generator`].
//!
//! Each admitted sequence gets its own small thread holding one streaming HTTP request; the
//! remote batches the sequences (that is what vLLM and SGLang are for), and
//! [`Generator::step`] only collects what the streams produced. A cancel closes the
//! sequence's connection at once, which is how OpenAI-compatible servers learn to stop.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::BufReader;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use shoal_sidecar_core::{
    BackendError, FinishReason, GenerateRequest, Generator, Prompt, SequenceEvent, SequenceId,
    StopFilter,
};

use crate::OpenAiError;
use crate::api;
use crate::embed::estimate_tokens;
use crate::http::{Abort, Http};
use crate::sse::{Event, EventReader};

const COMPLETIONS: &str = "/v1/completions";
const CHAT_COMPLETIONS: &str = "/v1/chat/completions";
/// How long one [`Generator::step`] waits for news before handing control back, so the model
/// thread can admit new sequences and cancellations at least this often.
const STEP_WAIT: Duration = Duration::from_millis(10);
/// OpenAI's own API takes at most four stop strings; the rest are caught by the local filter,
/// which sees every stop string anyway.
const REMOTE_STOPS: usize = 4;
/// Streams only parse JSON and copy text, so a small stack is plenty.
const STREAM_STACK_BYTES: usize = 256 * 1024;

/// What a stream thread reports.
enum News {
    /// Text after the stop filter (possibly empty: all held back); `chunk` when it stands
    /// for one remote chunk, which is one token on every server we know.
    Text {
        text: String,
        chunk: bool,
    },
    Done {
        finish_reason: FinishReason,
        prompt_tokens: Option<usize>,
        completion_tokens: Option<usize>,
    },
    Failed(String),
}

struct Message {
    id: SequenceId,
    /// Tells a new sequence from a cancelled one that had the same id.
    serial: u64,
    news: News,
}

/// A cancel that can arrive before the connection exists.
#[derive(Default)]
struct CancelSlot {
    cancelled: AtomicBool,
    abort: Mutex<Option<Abort>>,
}

impl CancelSlot {
    fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        if let Some(abort) = self.lock().as_ref() {
            abort.abort();
        }
    }

    /// Keeps `abort` for a later cancel; false (and the connection closed) if the cancel
    /// already came.
    fn register(&self, abort: Abort) -> bool {
        let mut slot = self.lock();
        if self.cancelled.load(Ordering::SeqCst) {
            abort.abort();
            return false;
        }
        *slot = Some(abort);
        true
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Abort>> {
        // Nothing panics while holding it.
        self.abort.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct Live {
    serial: u64,
    cancel: Arc<CancelSlot>,
    prompt_tokens: usize,
    completion_tokens: usize,
}

/// Generation on a remote OpenAI-compatible server.
pub(crate) struct RemoteGenerator {
    http: Arc<Http>,
    model: String,
    context_tokens: usize,
    live: RefCell<HashMap<SequenceId, Live>>,
    serial: std::cell::Cell<u64>,
    sender: Sender<Message>,
    receiver: Receiver<Message>,
}

impl RemoteGenerator {
    pub(crate) fn new(http: Arc<Http>, model: String, context_tokens: usize) -> Self {
        let (sender, receiver) = mpsc::channel();
        Self {
            http,
            model,
            context_tokens,
            live: RefCell::new(HashMap::new()),
            serial: std::cell::Cell::new(0),
            sender,
            receiver,
        }
    }

    /// Turns a stream's news into the event the server forwards, updating the sequence.
    fn translate(&self, message: Message) -> Option<(SequenceId, SequenceEvent)> {
        let mut live = self.live.borrow_mut();
        let entry = live.get_mut(&message.id)?;
        if entry.serial != message.serial {
            return None;
        }
        let event = match message.news {
            News::Text { text, chunk } => {
                entry.completion_tokens += usize::from(chunk);
                if text.is_empty() {
                    return None;
                }
                SequenceEvent::Tokens {
                    text,
                    token_ids: Vec::new(),
                }
            }
            News::Done {
                finish_reason,
                prompt_tokens,
                completion_tokens,
            } => {
                let entry = live.remove(&message.id)?;
                SequenceEvent::Done {
                    finish_reason,
                    prompt_tokens: prompt_tokens.unwrap_or(entry.prompt_tokens),
                    completion_tokens: completion_tokens.unwrap_or(entry.completion_tokens),
                }
            }
            News::Failed(reason) => {
                live.remove(&message.id);
                SequenceEvent::Failed(BackendError::Inference(format!(
                    "remote {}: {reason}",
                    self.http.endpoint
                )))
            }
        };
        Some((message.id, event))
    }
}

/// The JSON body and path of `request`.
pub(crate) fn request_body(model: &str, request: &GenerateRequest) -> (&'static str, Value) {
    let sampling = &request.sampling;
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        // llama.cpp keeps seeds in 32 bits and some servers parse them as signed; 31 bits
        // pass everywhere and stay deterministic.
        "seed": sampling.seed & 0x7fff_ffff,
        "stream": true,
        // vLLM, SGLang and OpenAI then end the stream with the exact token counts; servers
        // that do not know the option ignore it.
        "stream_options": { "include_usage": true },
    });
    // 0 means "off" in the protocol, but servers disagree on how to say it (0, -1, absent),
    // so it is left out and the remote's default applies.
    if sampling.top_k > 0 {
        body["top_k"] = json!(sampling.top_k);
    }
    // Both off by default, so only a request that asks for them sends them: vLLM, SGLang and
    // llama.cpp take `min_p`; the penalty is `repetition_penalty` to vLLM and SGLang and
    // `repeat_penalty` to llama.cpp, each ignoring the other's name.
    if sampling.min_p > 0.0 {
        body["min_p"] = json!(sampling.min_p);
    }
    if sampling.repetition_penalty != 1.0 {
        body["repetition_penalty"] = json!(sampling.repetition_penalty);
        body["repeat_penalty"] = json!(sampling.repetition_penalty);
    }
    if !request.stop.is_empty() {
        let stops: Vec<&str> = request
            .stop
            .iter()
            .take(REMOTE_STOPS)
            .map(String::as_str)
            .collect();
        body["stop"] = json!(stops);
    }
    match &request.prompt {
        Prompt::Text(text) => {
            body["prompt"] = json!(text);
            (COMPLETIONS, body)
        }
        Prompt::Messages(messages) => {
            body["messages"] = messages
                .iter()
                .map(|m| json!({ "role": m.role, "content": m.content }))
                .collect();
            (CHAT_COMPLETIONS, body)
        }
    }
}

fn prompt_estimate(prompt: &Prompt) -> usize {
    let tokens = match prompt {
        Prompt::Text(text) => estimate_tokens(text),
        // A template adds a few tokens per turn; the remote's usage replaces this when given.
        Prompt::Messages(messages) => messages
            .iter()
            .map(|m| estimate_tokens(&m.content) + estimate_tokens(&m.role) + 2)
            .sum(),
    };
    usize::try_from(tokens).unwrap_or(usize::MAX)
}

impl Generator for RemoteGenerator {
    fn context_tokens(&self) -> usize {
        self.context_tokens
    }

    fn admit(&self, id: SequenceId, request: GenerateRequest) -> Result<usize, BackendError> {
        let prompt_tokens = prompt_estimate(&request.prompt);
        let (path, body) = request_body(&self.model, &request);
        let body = serde_json::to_vec(&body).expect("a JSON value serialises");
        let serial = self.serial.get() + 1;
        self.serial.set(serial);
        let cancel = Arc::new(CancelSlot::default());
        let stream = Stream {
            http: Arc::clone(&self.http),
            path,
            body,
            stop: StopFilter::new(request.stop),
            cancel: Arc::clone(&cancel),
            sender: self.sender.clone(),
            id,
            serial,
        };
        std::thread::Builder::new()
            .name(format!("openai-seq-{}", id.0))
            .stack_size(STREAM_STACK_BYTES)
            .spawn(move || stream.run())
            .map_err(|e| BackendError::Inference(format!("cannot start a stream thread: {e}")))?;
        self.live.borrow_mut().insert(
            id,
            Live {
                serial,
                cancel,
                prompt_tokens,
                completion_tokens: 0,
            },
        );
        Ok(prompt_tokens)
    }

    fn cancel(&self, id: SequenceId) -> Option<SequenceEvent> {
        let entry = self.live.borrow_mut().remove(&id)?;
        entry.cancel.cancel();
        Some(SequenceEvent::Done {
            finish_reason: FinishReason::Cancelled,
            prompt_tokens: entry.prompt_tokens,
            completion_tokens: entry.completion_tokens,
        })
    }

    fn active(&self) -> usize {
        self.live.borrow().len()
    }

    fn step(&self) -> Vec<(SequenceId, SequenceEvent)> {
        if self.live.borrow().is_empty() {
            return Vec::new();
        }
        let first = match self.receiver.recv_timeout(STEP_WAIT) {
            Ok(message) => message,
            // The generator holds a sender itself, so the channel never disconnects.
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return Vec::new(),
        };
        std::iter::once(first)
            .chain(self.receiver.try_iter())
            .filter_map(|message| self.translate(message))
            .collect()
    }
}

impl Drop for RemoteGenerator {
    fn drop(&mut self) {
        // Unloading closes every stream still open, so the remote stops computing for nobody.
        for entry in self.live.get_mut().values() {
            entry.cancel.cancel();
        }
    }
}

/// One chunk of a streamed completion, as far as the sidecar reads it.
#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ChunkUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    /// `/v1/completions`.
    #[serde(default)]
    text: Option<String>,
    /// `/v1/chat/completions`.
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: Option<usize>,
    #[serde(default)]
    completion_tokens: Option<usize>,
}

/// OpenAI's finish reasons in the protocol's terms: only `length` is not a stop.
fn finish_reason(remote: &str) -> FinishReason {
    match remote {
        "length" => FinishReason::Length,
        _ => FinishReason::Stop,
    }
}

/// One sequence's streaming request, run on its own thread.
struct Stream {
    http: Arc<Http>,
    path: &'static str,
    body: Vec<u8>,
    stop: StopFilter,
    cancel: Arc<CancelSlot>,
    sender: Sender<Message>,
    id: SequenceId,
    serial: u64,
}

impl Stream {
    fn send(&self, news: News) {
        // The generator is gone (model unloaded): nobody is waiting for this sequence.
        let _ = self.sender.send(Message {
            id: self.id,
            serial: self.serial,
            news,
        });
    }

    fn run(mut self) {
        match self.stream() {
            Ok(Some(done)) => self.send(done),
            // Cancelled before the request went out: nobody listens any more.
            Ok(None) => {}
            // After a cancel, the aborted connection's error is expected and nobody listens.
            Err(_) if self.cancel.is_cancelled() => {}
            Err(e) => self.send(News::Failed(e.to_string())),
        }
    }

    /// Streams the sequence to its end; `None` when it was cancelled before it started.
    fn stream(&mut self) -> Result<Option<News>, OpenAiError> {
        let http = Arc::clone(&self.http);
        let path = self.path;
        let connection = http.connect()?;
        if !self.cancel.register(connection.abort_handle()?) {
            return Ok(None);
        }
        let response = api::success(
            &http,
            path,
            connection.send(path, Some(&self.body), "text/event-stream")?,
        )?;
        if !response
            .content_type
            .as_deref()
            .is_some_and(|t| t.starts_with("text/event-stream"))
        {
            return Err(OpenAiError::malformed(
                path,
                format!(
                    "expected a text/event-stream answer, got {}",
                    response
                        .content_type
                        .as_deref()
                        .unwrap_or("no Content-Type")
                ),
            ));
        }
        let mut events = EventReader::new(BufReader::new(response.body));
        let mut finished: Option<FinishReason> = None;
        let mut usage: Option<ChunkUsage> = None;
        loop {
            let event = match events.next_event() {
                Ok(event) => event,
                // The answer is complete; only the usage chunk or `[DONE]` went missing.
                Err(_) if finished.is_some() => break,
                Err(e) => return Err(http.io_error(path, &e)),
            };
            let data = match event {
                Some(Event::Data(data)) => data,
                Some(Event::Done) | None => break,
            };
            let chunk: Chunk = serde_json::from_str(&data).map_err(|e| {
                OpenAiError::malformed(path, format!("a stream chunk is not a completion: {e}"))
            })?;
            if let Some(error) = chunk.error {
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .map_or_else(|| error.to_string(), str::to_owned);
                return Err(OpenAiError::Status {
                    path: path.to_owned(),
                    status: 200,
                    message: message.chars().take(500).collect(),
                });
            }
            if chunk.usage.is_some() {
                usage = chunk.usage;
            }
            let Some(choice) = chunk.choices.into_iter().next() else {
                continue;
            };
            if finished.is_some() {
                continue;
            }
            // llama.cpp's last chunk carries only the finish reason, as an empty text.
            let text = choice.text.or(choice.delta.and_then(|d| d.content));
            if let Some(text) = text.filter(|t| !t.is_empty()) {
                let released = self.stop.push(&text);
                self.send(News::Text {
                    text: released.text,
                    chunk: true,
                });
                if released.stopped {
                    // The remote may not know this stop string (it got only the first few);
                    // hanging up makes it stop generating.
                    self.cancel.cancel();
                    return Ok(Some(News::Done {
                        finish_reason: FinishReason::Stop,
                        prompt_tokens: None,
                        completion_tokens: None,
                    }));
                }
            }
            if let Some(reason) = choice.finish_reason {
                finished = Some(finish_reason(&reason));
                let rest = self.stop.flush();
                if !rest.is_empty() {
                    self.send(News::Text {
                        text: rest,
                        chunk: false,
                    });
                }
            }
        }
        let finish_reason = finished.ok_or_else(|| {
            OpenAiError::malformed(path, "the stream ended without a finish_reason")
        })?;
        Ok(Some(News::Done {
            finish_reason,
            prompt_tokens: usage.as_ref().and_then(|u| u.prompt_tokens),
            completion_tokens: usage.as_ref().and_then(|u| u.completion_tokens),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_sidecar_core::{ChatMessage, Sampling};

    fn request(prompt: Prompt) -> GenerateRequest {
        GenerateRequest {
            prompt,
            max_tokens: 7,
            sampling: Sampling {
                temperature: 0.0,
                top_p: 1.0,
                top_k: 0,
                seed: u64::MAX,
                ..Sampling::default()
            },
            stop: (0..6).map(|i| format!("s{i}")).collect(),
            adapter: None,
        }
    }

    #[test]
    fn builds_openai_bodies() {
        let (path, body) = request_body("m", &request(Prompt::Text("hi".into())));
        assert_eq!(path, COMPLETIONS);
        assert_eq!(body["prompt"], "hi");
        assert_eq!(body["stream"], true);
        assert_eq!(body["max_tokens"], 7);
        assert_eq!(body["seed"], 0x7fff_ffff);
        assert_eq!(body["stop"].as_array().unwrap().len(), REMOTE_STOPS);
        assert!(body.get("top_k").is_none());
        assert!(body.get("min_p").is_none() && body.get("repetition_penalty").is_none());
        let mut chat = request(Prompt::Messages(vec![ChatMessage {
            role: "user".into(),
            content: "hello".into(),
        }]));
        chat.sampling.top_k = 5;
        chat.sampling.min_p = 0.05;
        chat.sampling.repetition_penalty = 1.25;
        let (path, body) = request_body("m", &chat);
        assert_eq!(path, CHAT_COMPLETIONS);
        assert_eq!(body["messages"][0]["content"], "hello");
        assert_eq!(body["top_k"], 5);
        assert_eq!(body["min_p"], json!(0.05f32));
        assert_eq!(body["repetition_penalty"], 1.25);
        assert_eq!(body["repeat_penalty"], 1.25);
    }

    #[test]
    fn maps_finish_reasons() {
        assert_eq!(finish_reason("length"), FinishReason::Length);
        for other in ["stop", "eos", "content_filter", "tool_calls"] {
            assert_eq!(finish_reason(other), FinishReason::Stop);
        }
    }
}

//! SmolLM2-135M-Instruct (Q4_1 GGUF) on Candle against two references reading the same file.
//!
//! - Quantized, against llama.cpp (llama-cpp-python): identical tokenisation, identical
//!   chat-template rendering, identical greedy tokens up to the first near-tie, one sequence at
//!   a time and all five decoding together in one batch, and the same next token at every
//!   teacher-forced step.
//! - Dequantized to f32 ([`GgufWeightMode::Dequantized`]), against transformers reading the
//!   GGUF in float32: the same prompt tokens from transformers' own GGUF tokenizer, and all 40
//!   greedy tokens of each of five prompts identical.

#[path = "../../../test-support/smollm2.rs"]
mod smollm2;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use shoal_sidecar_candle::{GgufWeightMode, LlamaGenerator};
use shoal_sidecar_core::{
    Backend, ChatMessage, FinishReason, GenerateRequest, Generator, ModelFamily, Prompt, Sampling,
    SequenceEvent, SequenceId,
};

const MIN_IDENTICAL: usize = 32;
/// llama.cpp's top-two logit gap below which its quantized kernels and Candle's may pick
/// differently.
const NEAR_TIE: f32 = 0.3;
/// The same for transformers in float32 against Candle dequantized: the two differ only by
/// float32 rounding and summation order.
const F32_NEAR_TIE: f32 = 1e-3;

#[derive(Deserialize)]
struct Fixture {
    eos: Vec<u32>,
    cases: Vec<Case>,
    /// Only the llama.cpp fixture has texts for the tokenizer alone.
    #[serde(default)]
    tokenize: Vec<Tokenized>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    prompt: Option<String>,
    messages: Option<Vec<Message>>,
    prompt_tokens: Vec<u32>,
    greedy: Vec<u32>,
    margins: Vec<f32>,
}

#[derive(Deserialize)]
struct Message {
    role: String,
    content: String,
}

#[derive(Deserialize)]
struct Tokenized {
    text: String,
    ids: Vec<u32>,
}

/// Reads `tools/reference/fixtures/<name>`.
fn fixture(name: &str) -> Fixture {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tools/reference/fixtures")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{} is missing ({e}); run tools/reference/regenerate.sh",
            path.display()
        )
    });
    let f: Fixture = serde_json::from_slice(&bytes).expect("fixture parses");
    assert_eq!(f.cases.len(), 5);
    f
}

fn load(mode: GgufWeightMode) -> LlamaGenerator {
    LlamaGenerator::load_gguf(&smollm2::smollm2_gguf(), &candle_core::Device::Cpu, mode)
        .expect("SmolLM2 loads")
}

impl Case {
    fn prompt(&self) -> Prompt {
        match (&self.prompt, &self.messages) {
            (Some(p), None) => Prompt::Text(p.clone()),
            (None, Some(m)) => Prompt::Messages(
                m.iter()
                    .map(|m| ChatMessage {
                        role: m.role.clone(),
                        content: m.content.clone(),
                    })
                    .collect(),
            ),
            _ => panic!("{}: exactly one of prompt and messages", self.name),
        }
    }

    fn request(&self) -> GenerateRequest {
        GenerateRequest {
            prompt: self.prompt(),
            max_tokens: self.greedy.len(),
            sampling: Sampling {
                temperature: 0.0,
                ..Sampling::default()
            },
            stop: Vec::new(),
        }
    }
}

/// Runs `cases` together to the end; returns, per case, the generated ids (EOS included when
/// it ended the sequence) and the finish reason.
fn run_together(g: &LlamaGenerator, cases: &[&Case]) -> Vec<(Vec<u32>, FinishReason)> {
    let mut out: BTreeMap<u64, (Vec<u32>, Option<FinishReason>)> = BTreeMap::new();
    for (i, case) in cases.iter().enumerate() {
        let id = SequenceId(i as u64);
        let prompt_tokens = g.admit(id, case.request()).expect("admitted");
        assert_eq!(prompt_tokens, case.prompt_tokens.len(), "{}", case.name);
        out.insert(i as u64, (Vec::new(), None));
    }
    let mut steps = 0;
    while g.active() > 0 {
        steps += 1;
        assert!(steps < 1000, "generation does not end");
        for (SequenceId(id), event) in g.step() {
            let entry = out.get_mut(&id).unwrap();
            match event {
                SequenceEvent::Tokens { token_ids, .. } => entry.0.extend(token_ids),
                SequenceEvent::Done {
                    finish_reason,
                    completion_tokens,
                    ..
                } => {
                    if finish_reason == FinishReason::Stop && entry.0.len() < completion_tokens {
                        // The end-of-sequence token is counted but never sent as text.
                        entry.0.push(u32::MAX);
                    }
                    entry.1 = Some(finish_reason);
                }
                SequenceEvent::Failed(e) => panic!("sequence {id} failed: {e}"),
            }
        }
    }
    out.into_values()
        .map(|(ids, reason)| (ids, reason.expect("every sequence finished")))
        .collect()
}

/// Why `got` disagrees with the reference for `case`, or `None` when it agrees: the tokens
/// must be identical up to the first difference, and a difference is only allowed at a
/// near-tie (the reference's top-two logits closer than `near_tie`), where two
/// implementations that agree to some tolerance and not bit for bit may break the tie
/// differently. Returns the identical prefix length too.
fn mismatch(
    case: &Case,
    fixture: &Fixture,
    got: &(Vec<u32>, FinishReason),
    near_tie: f32,
) -> (usize, Option<String>) {
    let (ids, reason) = got;
    let mut want = case.greedy.clone();
    let ended = want.last().is_some_and(|t| fixture.eos.contains(t));
    if ended {
        *want.last_mut().unwrap() = u32::MAX;
    }
    let same = ids.iter().zip(&want).take_while(|(a, b)| a == b).count();
    if same == want.len() && ids.len() == want.len() {
        let expected = if ended {
            FinishReason::Stop
        } else {
            FinishReason::Length
        };
        let problem = (*reason != expected).then(|| format!("{}: finish {reason:?}", case.name));
        return (same, problem);
    }
    let margin = case.margins.get(same).copied().unwrap_or(f32::INFINITY);
    if margin < near_tie {
        return (same, None);
    }
    (
        same,
        Some(format!(
            "{}: differs at step {same} where the reference's margin is {margin} (not a near-tie)\n got {ids:?}\nwant {want:?}",
            case.name
        )),
    )
}

/// Decodes every case of `fixture` greedily, alone and then all together in one batch, and
/// returns the prompt-token, greedy-token ([`mismatch`]) and batching disagreements, plus the
/// identical prefix length of each case.
fn check_greedy(
    g: &LlamaGenerator,
    fixture: &Fixture,
    near_tie: f32,
    reference: &str,
) -> (Vec<String>, Vec<usize>) {
    let mut problems = Vec::new();
    for case in &fixture.cases {
        assert!(case.greedy.len() >= MIN_IDENTICAL, "{}", case.name);
        let ids = g.tokenize(&case.prompt()).unwrap();
        if ids != case.prompt_tokens {
            problems.push(format!(
                "{}: prompt tokens (chat template rendering included)\n got {ids:?}\nwant {:?}",
                case.name, case.prompt_tokens
            ));
        }
    }
    let mut alone = Vec::new();
    let mut identical = Vec::new();
    for case in &fixture.cases {
        let got = run_together(g, &[case]);
        let (same, problem) = mismatch(case, fixture, &got[0], near_tie);
        eprintln!(
            "{}: {same} of {} greedy tokens identical to {reference}",
            case.name,
            case.greedy.len()
        );
        identical.push(same);
        alone.push(got.into_iter().next().unwrap());
        problems.extend(problem);
    }
    // Batching must not change a single token: a sequence decodes the same with or without
    // neighbours, so the batched run is held to the solo runs exactly.
    let all: Vec<&Case> = fixture.cases.iter().collect();
    let together = run_together(g, &all);
    for ((case, got), solo) in fixture.cases.iter().zip(&together).zip(&alone) {
        if got != solo {
            problems.push(format!(
                "{}: batched differs from alone\n got {:?}\nsolo {:?}",
                case.name, got.0, solo.0
            ));
        }
    }
    (problems, identical)
}

#[test]
fn smollm2_matches_llama_cpp() {
    let fixture = fixture("smollm2.json");
    let g = load(GgufWeightMode::Quantized);
    assert_eq!(g.family(), ModelFamily::Generate);
    assert_eq!(g.dim(), 49152);
    assert_eq!(g.context_tokens(), 8192);

    for t in &fixture.tokenize {
        let ids = g.tokenize(&Prompt::Text(t.text.clone())).unwrap();
        assert_eq!(ids, t.ids, "tokenisation of {:?}", t.text);
    }
    let (problems, _) = check_greedy(&g, &fixture, NEAR_TIE, "llama.cpp");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Dequantized, Candle computes what transformers computes from the GGUF up to float32
/// rounding, so every case must run its full 40 tokens identical, not merely to a near-tie.
#[test]
fn smollm2_dequantized_matches_transformers() {
    let fixture = fixture("smollm2-f32.json");
    let g = load(GgufWeightMode::Dequantized);
    let (mut problems, identical) = check_greedy(&g, &fixture, F32_NEAR_TIE, "transformers");
    for (case, same) in fixture.cases.iter().zip(identical) {
        if same < MIN_IDENTICAL {
            problems.push(format!(
                "{}: only {same} greedy tokens identical, {MIN_IDENTICAL} required",
                case.name
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Teacher-forced: fed the reference's own prefix at every step, Candle's argmax must be the
/// reference's next token at each of the 40 steps of all five prompts, except where the
/// reference itself is at a near-tie. Unlike the free-running test, one tie does not end the
/// comparison, so every step is checked.
#[test]
fn smollm2_agrees_with_llama_cpp_at_every_teacher_forced_step() {
    let fixture = fixture("smollm2.json");
    let g = load(GgufWeightMode::Quantized);
    let mut checked = 0;
    let mut ties = 0;
    let mut problems = Vec::new();
    for case in &fixture.cases {
        let forced = &case.greedy[..case.greedy.len() - 1];
        let rows = g
            .teacher_forced_logits(&case.prompt_tokens, forced)
            .expect("forward pass");
        for ((step, &want), logits) in case.greedy.iter().enumerate().zip(&rows) {
            let got = argmax(logits);
            checked += 1;
            if got != want {
                if case.margins[step] < NEAR_TIE {
                    ties += 1;
                } else {
                    problems.push(format!(
                        "{} step {step}: candle {got}, llama.cpp {want} (margin {})",
                        case.name, case.margins[step]
                    ));
                }
            }
        }
    }
    eprintln!("teacher-forced: {checked} steps, {ties} differ at near-ties");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked >= MIN_IDENTICAL * fixture.cases.len());
}

fn argmax(logits: &[f32]) -> u32 {
    let best = logits
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(i, _)| i)
        .expect("non-empty logits");
    best as u32
}

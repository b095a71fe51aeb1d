//! OpenAI-compatible mock judge (owned by the judge client work).

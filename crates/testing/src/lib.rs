//! In-process servers for tests, benches and demos: an OpenAI-compatible mock judge
//! (`mock_judge`) and a local page server (`page_server`). Both bind 127.0.0.1 only.
//! `stubs` stands in for the judge and the fetcher with no server at all.

pub mod mock_answer;
pub mod mock_batch;
pub mod mock_chat;
pub mod mock_config;
pub mod mock_judge;
pub mod page_server;
pub mod prefix_cache;
pub mod stubs;

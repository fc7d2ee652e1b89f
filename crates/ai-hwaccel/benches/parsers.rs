#![allow(missing_docs, reason = "criterion macros")]
//! Parser benchmarks: each parser on the largest fixture of its format.

use criterion::{Criterion, criterion_group, criterion_main};

fn parsers(_c: &mut Criterion) {}

criterion_group!(benches, parsers);
criterion_main!(benches);

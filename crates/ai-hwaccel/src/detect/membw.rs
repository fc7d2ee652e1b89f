//! A short measurement of the host's memory read bandwidth, for planning on
//! the CPU (llama.cpp's decode speed is bounded by it). Never run by
//! detection; only on request (`plan --measure`). Each thread sums its
//! share of one buffer of `bytes` bytes (pages touched first), the best of
//! `passes` timed passes is kept: bytes read ÷ seconds. A read-only sum is
//! what decoding does to the weights; it is not a STREAM figure (STREAM's
//! copy/triad also write), and it reads what this process is allowed to use
//! now (other load on the machine lowers it).

use std::time::Instant;

/// Host memory read bandwidth in bytes per second over `bytes` bytes with
/// `threads` threads, the best of `passes`; `None` when nothing could be
/// measured (zero sizes, a pass too fast to time).
pub fn measure_read_bandwidth(bytes: usize, threads: usize, passes: usize) -> Option<f64> {
    let threads = threads.max(1);
    let words = bytes / 8;
    if words < threads || passes == 0 {
        return None;
    }
    // Distinct values so the pages are really written (not shared zero pages).
    let buf: Vec<u64> = (0..words as u64).collect();
    let chunk = words.div_ceil(threads);
    let mut best: Option<f64> = None;
    for _ in 0..passes {
        let start = Instant::now();
        let total: u64 = std::thread::scope(|s| {
            let handles: Vec<_> = buf
                .chunks(chunk)
                .map(|part| s.spawn(move || part.iter().fold(0u64, |acc, &x| acc.wrapping_add(x))))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(0))
                .fold(0u64, u64::wrapping_add)
        });
        std::hint::black_box(total);
        let secs = start.elapsed().as_secs_f64();
        if secs > 0.0 {
            let rate = (words * 8) as f64 / secs;
            best = Some(best.map_or(rate, |b: f64| b.max(rate)));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_measurement_returns_a_positive_rate_and_bad_sizes_none() {
        let r = measure_read_bandwidth(8 << 20, 2, 2).expect("a rate");
        assert!(r > 0.0);
        assert_eq!(measure_read_bandwidth(0, 2, 2), None);
        assert_eq!(measure_read_bandwidth(8 << 20, 2, 0), None);
    }
}

//! Indicative timings of the kernel on a synthetic Zipf corpus (no Python involved):
//!
//!     cargo run --release --example bench -- [docs]
//!
//! Numbers depend on the machine; use them to compare changes, not as a specification.

use std::time::Instant;

use memwire_core::BankIndex;

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn main() {
    let docs: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let vocab = 50_000usize;
    // Zipf(1) over the vocabulary by inverting the cumulative weights.
    let mut cum = Vec::with_capacity(vocab);
    let mut total = 0.0;
    for i in 0..vocab {
        total += 1.0 / (i + 1) as f64;
        cum.push(total);
    }
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let word = |rng: &mut Rng| {
        let x = rng.unit() * total;
        format!("w{}", cum.partition_point(|&c| c < x))
    };
    let texts: Vec<String> = (0..docs)
        .map(|_| {
            let n = 10 + rng.below(41) as usize;
            (0..n).map(|_| word(&mut rng)).collect::<Vec<_>>().join(" ")
        })
        .collect();
    let ordinals: Vec<i64> = (0..docs as i64).collect();
    let mut index = BankIndex::new(0).unwrap();
    let t = Instant::now();
    index.add_many(&ordinals, &texts, None).unwrap();
    println!("add_many {docs} docs: {:.3} s ({:?})", t.elapsed().as_secs_f64(), index.stats());

    let mixed: Vec<String> = (0..300)
        .map(|_| (0..1 + rng.below(4)).map(|_| word(&mut rng)).collect::<Vec<_>>().join(" "))
        .collect();
    let head = vec![
        "w0 w1 w2".to_owned();
        std::env::var("BENCH_HEAD").map_or(100, |v| v.parse().unwrap())
    ];
    for (label, queries) in [("zipf 1-4 terms", &mixed), ("head 3 terms", &head)] {
        index.search_bm25(&queries[0], 10, None).unwrap();
        let mut times: Vec<f64> = queries
            .iter()
            .map(|q| {
                let t = Instant::now();
                std::hint::black_box(index.search_bm25(q, 10, None).unwrap());
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        times.sort_by(f64::total_cmp);
        println!(
            "bm25 top-10, {label}: median {:.0} us, p95 {:.0} us",
            times[times.len() / 2],
            times[times.len() * 95 / 100]
        );
    }
}

//! One simulated accelerator that every model of a sidecar shares.
//!
//! By default each simulated model has its own timeline: two models on one sidecar compute at
//! the same time, as two accelerators would. A fleet that packs several models on one
//! accelerator needs the opposite: their batches take turns on one device, each starting when
//! the one before it ends, in the order they reach it (as kernels queued on one GPU), so
//! holding more models never adds compute. A sidecar started with `--sim-device shared` runs
//! every simulated model on the one [`SharedDevice`] of its process.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// A device timeline: when it is next free, and how long it has been busy in all.
#[derive(Debug, Default)]
pub struct SharedDevice {
    free_at: Mutex<Option<Instant>>,
    busy_us: AtomicU64,
}

impl SharedDevice {
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs a batch that was ready at `ready` and costs `cost` on the device: it starts once
    /// the device is free (at `ready` if it already is) and this returns when it is done.
    /// Returns when the batch started on the device.
    pub fn run(&self, ready: Instant, cost: Duration) -> Instant {
        let (start, end) = {
            let mut free_at = self.free_at.lock().unwrap_or_else(PoisonError::into_inner);
            let start = free_at.map_or(ready, |free| free.max(ready));
            let end = start + cost;
            *free_at = Some(end);
            (start, end)
        };
        let now = Instant::now();
        if end > now {
            std::thread::sleep(end - now);
        }
        // Counted once done, as a model's `busy_us` is, so a batch reserved ahead of its turn
        // does not count before it ran.
        self.busy_us.fetch_add(
            u64::try_from(cost.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        start
    }

    /// Time the device has spent on batches since the sidecar started, µs.
    pub fn busy_us(&self) -> u64 {
        self.busy_us.load(Ordering::Relaxed)
    }
}

static SHARED: OnceLock<SharedDevice> = OnceLock::new();

/// Makes every simulated model of this process share one device from now on (the sidecar's
/// `--sim-device shared`, set once at start, before any model loads).
pub fn share_one_device() -> &'static SharedDevice {
    SHARED.get_or_init(SharedDevice::new)
}

/// The process's shared device, if [`share_one_device`] was called.
pub fn shared_device() -> Option<&'static SharedDevice> {
    SHARED.get()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn batches_take_turns_and_busy_time_is_their_cost() {
        let device = Arc::new(SharedDevice::new());
        let cost = Duration::from_millis(40);
        let began = Instant::now();
        let runs: Vec<_> = (0..3)
            .map(|_| {
                let device = Arc::clone(&device);
                std::thread::spawn(move || device.run(Instant::now(), cost))
            })
            .collect();
        let mut starts: Vec<Instant> = runs.into_iter().map(|h| h.join().unwrap()).collect();
        starts.sort();
        // Three 40 ms batches on one device end no sooner than 120 ms after the first began,
        // each starting when the one before it ended.
        assert!(began.elapsed() >= Duration::from_millis(120));
        assert_eq!(starts[1] - starts[0], cost);
        assert_eq!(starts[2] - starts[1], cost);
        assert_eq!(device.busy_us(), 120_000);
    }

    #[test]
    fn an_idle_device_starts_a_batch_when_it_was_ready() {
        let device = SharedDevice::new();
        let ready = Instant::now();
        assert_eq!(device.run(ready, Duration::from_millis(1)), ready);
        std::thread::sleep(Duration::from_millis(5));
        let later = Instant::now();
        assert_eq!(device.run(later, Duration::from_millis(1)), later);
        assert_eq!(device.busy_us(), 2_000);
    }
}

//! `--sim-device shared`: every simulated model of the sidecar takes turns on one device, and
//! `stats` reports how long that device was busy. A test binary of its own, since the shared
//! device belongs to the whole process once a sidecar in it asks for one.

mod common;

use common::*;
use shoal_sidecar::{BackendKind, SimDevice};

fn slow_sim(id: u64, model: &str) -> V {
    req(
        id,
        "load",
        &[
            ("model", V::from(model)),
            ("backend", V::from("sim")),
            (
                "sim",
                V::Map(vec![
                    (V::from("fixed_us"), V::from(300_000)),
                    (V::from("per_padded_token_ns"), V::from(0)),
                ]),
            ),
        ],
    )
}

/// Two models' batches sent at once: on a shared device the second starts when the first
/// ends, so one of them takes the cost of both, and the device was busy for the two costs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_on_a_shared_device_take_turns() {
    let sidecar = TestSidecar::start_with(&[], |options| {
        options.backend = BackendKind::Sim;
        options.sim_device = SimDevice::Shared;
    })
    .await;
    let mut control = sidecar.client().await;
    assert_ok(&control.call(&slow_sim(1, "a")).await, 1);
    assert_ok(&control.call(&slow_sim(2, "b")).await, 2);
    let (mut x, mut y) = (sidecar.client().await, sidecar.client().await);
    let embed = |id: u64, model: &str| {
        req(
            id,
            "embed",
            &[("model", V::from(model)), ("inputs", strs(&["hello"]))],
        )
    };
    let (first, second) = (embed(10, "a"), embed(11, "b"));
    let (ra, rb) = tokio::join!(x.call(&first), y.call(&second));
    assert_ok(&ra, 10);
    assert_ok(&rb, 11);
    let computes: Vec<u64> = [&ra, &rb]
        .iter()
        .map(|r| get(r, "compute_us").as_u64().unwrap())
        .collect();
    // Each model has its own thread, so neither waited in a queue: the turn is on the device.
    assert!(computes.iter().max().unwrap() >= &600_000, "{computes:?}");
    assert!(computes.iter().min().unwrap() < &600_000, "{computes:?}");

    let stats = control.call(&req(3, "stats", &[])).await;
    assert_ok(&stats, 3);
    assert_eq!(get(&stats, "device_busy_us").as_u64(), Some(600_000));
    sidecar.stop().await;
}

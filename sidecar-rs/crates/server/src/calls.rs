//! What a connection asks of the model threads: each call looks the model up in the registry,
//! queues a job (`crate::job`) on its thread and turns what comes back into frames. One file
//! per kind of job.

pub(crate) mod adapter;
pub(crate) mod batch;
pub(crate) mod generate;

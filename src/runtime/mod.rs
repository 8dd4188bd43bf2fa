//! Runtime building blocks: work queues with per-key backoff, leader election on a
//! Lease, Prometheus metrics and the health endpoints.

mod health;
mod launch;
mod leader;
mod manager;
mod metrics;
mod preflight;
mod queue;
mod unseen_writes;

pub use health::{HealthError, HealthServer, Readiness, router};
#[cfg(feature = "embedded")]
pub use launch::EMBEDDED_KUBECONFIG;
pub use launch::{
    Cluster, LaunchError, RunArgs, connect, connect_in_process, manager_options, run_controllers,
    shutdown_signal,
};
pub use leader::{LeaderConfig, LeaderElector, LeaderError};
pub use manager::{ControllerHandle, Manager, ManagerError, ManagerOptions};
pub use metrics::{Metrics, ResultLabel};
pub use preflight::{
    Missing, RECHECK, manager_permissions, missing, summarize, wait_until_allowed,
};
pub use queue::{
    Backoff, DEFAULT_RESYNC, QueueConfig, QueueError, QueueStats, WorkOutcome, WorkQueue,
};

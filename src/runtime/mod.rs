//! Runtime building blocks: work queues with per-key backoff, leader election on a
//! Lease, Prometheus metrics and the health endpoints.

mod cluster;
mod health;
mod launch;
mod leader;
#[cfg(feature = "cli")]
mod logs;
mod manager;
mod metrics;
mod metrics_server;
mod preflight;
mod prometheus_text;
mod queue;
mod rbac_changes;
mod rest_metrics;
mod unseen_writes;

/// The default resync period, defined beside the reconcilers' `Config` (whose tracker lease
/// follows it).
pub use crate::reconcilers::DEFAULT_RESYNC;
pub use cluster::{
    CLUSTER_TARGET, Cluster, ClusterArgs, EMBEDDED_KUBECONFIG, LaunchError, absolute, connect,
    connect_in_process,
};
pub use health::{HealthError, HealthServer, Readiness, router};
pub use launch::{BindAddress, RunArgs, manager_options, run_controllers, shutdown_signal};
pub use leader::{LeaderConfig, LeaderElector, LeaderError};
#[cfg(feature = "cli")]
pub use logs::{LogArgs, LogFormat};
pub use manager::{ControllerHandle, Manager, ManagerError, ManagerOptions};
pub use metrics::{Metrics, ResultLabel};
pub use metrics_server::{MetricsServer, MetricsServerError, MetricsServing};
pub use preflight::{
    Missing, Waiting, absent_account, manager_permissions, missing, rbac_watch_permissions,
    summarize, wait_until_allowed,
};
pub use queue::{
    Backoff, QueueConfig, QueueError, QueueObserver, QueueStats, QueueTiming, WorkOutcome,
    WorkQueue,
};
pub use rbac_changes::{DEBOUNCE, FALLBACK_RECHECK, RECHECK, RbacChanges};

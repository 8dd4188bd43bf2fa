//! Leader election on a `coordination.k8s.io/v1` Lease.

use std::{future::Future, pin::pin, time::Duration};

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{Api, api::PostParams};
use tokio::{
    sync::watch,
    time::{Instant, sleep, timeout_at},
};
use tracing::{debug, info, warn};

/// How a candidate takes part in leader election.
#[derive(Clone, Debug)]
pub struct LeaderConfig {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name.
    pub name: String,
    /// This candidate's identity, unique among candidates.
    pub identity: String,
    /// How long a lease is held without renewal before others may take it.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it steps down.
    pub renew_deadline: Duration,
    /// How often candidates try to acquire, and the leader to renew.
    pub retry_period: Duration,
}

impl LeaderConfig {
    /// A config with the usual timings: lease 15 s, renew deadline 10 s, retry 2 s.
    pub fn new(
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    fn validate(&self) -> Result<(), LeaderError> {
        let invalid = |why| Err(LeaderError::InvalidConfig(why));
        if self.identity.is_empty() {
            return invalid("identity is empty");
        }
        if self.retry_period.is_zero() {
            return invalid("retry period is zero");
        }
        if self.renew_deadline <= self.retry_period {
            return invalid("renew deadline must be longer than the retry period");
        }
        if self.lease_duration <= self.renew_deadline {
            return invalid("lease duration must be longer than the renew deadline");
        }
        Ok(())
    }
}

/// A failure of leader election.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// The timings or identity make no sense.
    #[error("invalid leader election config: {0}")]
    InvalidConfig(&'static str),
    /// The API server refused or failed a Lease request.
    #[error("lease request failed: {0}")]
    Api(#[from] kube::Error),
    /// A Lease request took too long.
    #[error("lease request timed out")]
    Timeout,
}

/// The last version of the Lease this candidate saw, and when it saw it change.
struct Observed {
    resource_version: Option<String>,
    at: Instant,
}

/// One candidate for leadership; [`LeaderElector::run`] campaigns until shutdown.
pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaderConfig,
    leading: watch::Sender<bool>,
    observed: Option<Observed>,
}

impl LeaderElector {
    /// A candidate using `client`; fails when the timings are inconsistent.
    pub fn new(client: kube::Client, config: LeaderConfig) -> Result<Self, LeaderError> {
        config.validate()?;
        Ok(Self {
            api: Api::namespaced(client, &config.namespace),
            config,
            leading: watch::Sender::new(false),
            observed: None,
        })
    }

    /// Whether this candidate leads, updated on every change.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.leading.subscribe()
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    /// Acquires and renews the lease until `shutdown` completes, then releases it if held.
    pub async fn run(mut self, shutdown: impl Future<Output = ()>) {
        let mut shutdown = pin!(shutdown);
        let mut renewed: Option<Instant> = None;
        info!(identity = %self.config.identity, lease = %self.config.name, "campaigning for leadership");
        loop {
            let deadline = match renewed {
                Some(at) => at + self.config.renew_deadline,
                None => Instant::now() + self.config.renew_deadline,
            };
            let attempt = tokio::select! {
                () = &mut shutdown => break,
                attempt = timeout_at(deadline, self.try_acquire_or_renew()) => {
                    attempt.unwrap_or(Err(LeaderError::Timeout))
                }
            };
            renewed = self.settle(attempt, renewed);
            tokio::select! {
                () = &mut shutdown => break,
                () = sleep(self.config.retry_period) => {}
            }
        }
        if self.is_leading() {
            self.release().await;
        }
    }

    /// Updates leadership after an attempt; when the lease was last renewed, if leading.
    fn settle(
        &mut self,
        attempt: Result<bool, LeaderError>,
        renewed: Option<Instant>,
    ) -> Option<Instant> {
        let identity = &self.config.identity;
        match attempt {
            Ok(true) => {
                if !self.is_leading() {
                    info!(%identity, lease = %self.config.name, "became leader");
                    self.leading.send_replace(true);
                }
                Some(Instant::now())
            }
            Ok(false) => {
                if self.is_leading() {
                    warn!(%identity, lease = %self.config.name, "lost the lease to another holder");
                    self.leading.send_replace(false);
                }
                None
            }
            Err(err) => {
                let expired = renewed.is_some_and(|at| at.elapsed() >= self.config.renew_deadline);
                if expired {
                    warn!(%identity, error = %err, "could not renew the lease in time; stepping down");
                    self.leading.send_replace(false);
                    return None;
                }
                debug!(%identity, error = %err, "lease attempt failed");
                renewed
            }
        }
    }

    fn is_leading(&self) -> bool {
        *self.leading.borrow()
    }

    /// One round: take the lease if free or expired, renew it if ours; whether we hold it.
    async fn try_acquire_or_renew(&mut self) -> Result<bool, LeaderError> {
        let Some(lease) = self.api.get_opt(&self.config.name).await? else {
            return self.create().await;
        };
        self.observe(&lease);
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.as_deref().filter(|h| !h.is_empty());
        let ours = holder == Some(self.config.identity.as_str());
        if !ours && holder.is_some() && !self.expired(&spec) {
            return Ok(false);
        }
        let now = MicroTime(Timestamp::now());
        let spec = if ours {
            LeaseSpec {
                renew_time: Some(now),
                lease_duration_seconds: Some(self.lease_seconds()),
                ..spec
            }
        } else {
            debug!(identity = %self.config.identity, previous = ?holder, "taking the lease");
            self.holder_spec(spec.lease_transitions.unwrap_or(0) + i32::from(holder.is_some()))
        };
        self.write(Lease {
            spec: Some(spec),
            ..lease
        })
        .await
    }

    /// Creates the lease with us as holder; `false` if someone else created it first.
    async fn create(&mut self) -> Result<bool, LeaderError> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.config.name.clone()),
                namespace: Some(self.config.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(self.holder_spec(0)),
        };
        match self.api.create(&PostParams::default(), &lease).await {
            Ok(created) => {
                self.observe(&created);
                Ok(true)
            }
            Err(err) if is_conflict(&err) => Ok(false),
            Err(err) => Err(err.into()),
        }
    }

    /// Replaces the lease at the version read; `false` if another writer got there first.
    async fn write(&mut self, lease: Lease) -> Result<bool, LeaderError> {
        match self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(written) => {
                self.observe(&written);
                Ok(true)
            }
            Err(err) if is_conflict(&err) => Ok(false),
            Err(err) => Err(err.into()),
        }
    }

    /// Gives the lease up so another candidate can take it at once.
    async fn release(&mut self) {
        self.leading.send_replace(false);
        let identity = self.config.identity.clone();
        let deadline = Instant::now() + self.config.renew_deadline;
        let released = timeout_at(deadline, async {
            let Some(lease) = self.api.get_opt(&self.config.name).await? else {
                return Ok(false);
            };
            let spec = lease.spec.clone().unwrap_or_default();
            if spec.holder_identity.as_deref() != Some(identity.as_str()) {
                return Ok(false);
            }
            let spec = LeaseSpec {
                holder_identity: None,
                lease_duration_seconds: Some(1),
                ..spec
            };
            self.write(Lease {
                spec: Some(spec),
                ..lease
            })
            .await
        })
        .await
        .unwrap_or(Err(LeaderError::Timeout));
        match released {
            Ok(true) => info!(%identity, lease = %self.config.name, "released the lease"),
            Ok(false) => debug!(%identity, "lease no longer ours; nothing to release"),
            Err(err) => warn!(%identity, error = %err, "could not release the lease"),
        }
    }

    /// A spec naming us holder from now.
    fn holder_spec(&self, transitions: i32) -> LeaseSpec {
        let now = MicroTime(Timestamp::now());
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(self.lease_seconds()),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }

    /// Notes when the lease last changed, by our own clock (immune to clock skew).
    fn observe(&mut self, lease: &Lease) {
        let version = lease.metadata.resource_version.clone();
        if self.observed.as_ref().map(|o| &o.resource_version) != Some(&version) {
            self.observed = Some(Observed {
                resource_version: version,
                at: Instant::now(),
            });
        }
    }

    /// Whether the holder has let the lease lapse since we saw it change.
    fn expired(&self, spec: &LeaseSpec) -> bool {
        let duration = spec
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .map_or(self.config.lease_duration, Duration::from_secs);
        self.observed
            .as_ref()
            .is_some_and(|o| o.at.elapsed() >= duration)
    }

    /// The lease duration in whole seconds, rounded up.
    fn lease_seconds(&self) -> i32 {
        let millis = self.config.lease_duration.as_millis().div_ceil(1000);
        i32::try_from(millis).unwrap_or(i32::MAX)
    }
}

fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 409)
}

//! What both kinds of test case share: named tables and ordered suites, focus and skip,
//! the configs of a case, stashed values and the checks of an outcome.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;

use super::config::{ExpectConfig, StartedConfig};
use super::diff::{Compare, diff, normalized, pretty};
use crate::reconcilers::{Config, Outcome, ReconcileResult, RequestOptions, Stash};

/// How long a reconcile may take in a test before it fails.
pub(super) const DEADLINE: Duration = Duration::from_secs(30);

/// Runs before the reconciler, with the default config; an error fails the case.
pub type Callback = Box<dyn Fn(&Config) -> Result<(), String> + Send + Sync>;

/// Every mismatch of a test run, one message each.
#[derive(Debug)]
pub struct Failures(pub Vec<String>);

impl fmt::Display for Failures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failure(s):\n\n{}", self.0.len(), self.0.join("\n\n"))
    }
}

impl std::error::Error for Failures {}

/// A test case of a table.
pub trait TestCase: Sized {
    /// What the factory builds for the case.
    type Reconciler;

    /// The case's name.
    fn name(&self) -> &str;

    /// Renames the case (a table's key becomes its name).
    fn set_name(&mut self, name: String);

    /// Whether only this case should run.
    fn focus(&self) -> bool;

    /// Whether the case is skipped.
    fn skip(&self) -> bool;

    /// Runs the case; returns its failures.
    fn run(
        self,
        factory: &dyn Fn(&Self, &Config) -> Self::Reconciler,
    ) -> impl Future<Output = Vec<String>>;
}

/// The `name`, `set_name`, `focus` and `skip` of a [`TestCase`] whose struct has `name`,
/// `focus` and `skip` fields.
macro_rules! case_identity {
    () => {
        fn name(&self) -> &str {
            &self.name
        }

        fn set_name(&mut self, name: String) {
            self.name = name;
        }

        fn focus(&self) -> bool {
            self.focus
        }

        fn skip(&self) -> bool {
            self.skip
        }
    };
}
pub(super) use case_identity;

/// Test cases run in order (reconciler.io's `*TestSuite`).
pub struct TestSuite<C>(pub Vec<C>);

/// Named test cases (reconciler.io's `*Tests`); run in name order.
pub struct TestTable<C>(pub BTreeMap<String, C>);

impl<C: TestCase> TestSuite<C> {
    /// Runs the cases; only the first focused one if any is focused (which then fails).
    pub async fn try_run(
        self,
        factory: impl Fn(&C, &Config) -> C::Reconciler,
    ) -> Result<(), Failures> {
        let total = self.0.len();
        let focused = self.0.iter().filter(|c| c.focus()).count();
        let cases: Vec<C> = match focused {
            0 => self.0,
            _ => self.0.into_iter().filter(|c| c.focus()).take(1).collect(),
        };
        let mut failures = Vec::new();
        for case in cases.into_iter().filter(|c| !c.skip()) {
            let name = case.name().to_string();
            for failure in case.run(&factory).await {
                failures.push(format!("test case {name:?}: {failure}"));
            }
        }
        if focused > 0 {
            failures.push(format!(
                "{focused} tests out of {total} are still focused, so the test suite fails"
            ));
        }
        match failures.is_empty() {
            true => Ok(()),
            false => Err(Failures(failures)),
        }
    }

    /// Runs the cases and panics with every failure.
    pub async fn run(self, factory: impl Fn(&C, &Config) -> C::Reconciler) {
        if let Err(failures) = self.try_run(factory).await {
            panic!("{failures}");
        }
    }
}

impl<C: TestCase> TestTable<C> {
    /// The cases as a suite, named by their keys.
    fn into_suite(self) -> TestSuite<C> {
        let cases = self.0.into_iter().map(|(name, mut case)| {
            case.set_name(name);
            case
        });
        TestSuite(cases.collect())
    }

    /// Runs the cases (see [`TestSuite::try_run`]).
    pub async fn try_run(
        self,
        factory: impl Fn(&C, &Config) -> C::Reconciler,
    ) -> Result<(), Failures> {
        self.into_suite().try_run(factory).await
    }

    /// Runs the cases and panics with every failure.
    pub async fn run(self, factory: impl Fn(&C, &Config) -> C::Reconciler) {
        self.into_suite().run(factory).await
    }
}

impl<C> From<Vec<C>> for TestSuite<C> {
    fn from(cases: Vec<C>) -> Self {
        Self(cases)
    }
}

impl<C, const N: usize> From<[(&str, C); N]> for TestTable<C> {
    fn from(cases: [(&str, C); N]) -> Self {
        Self(cases.into_iter().map(|(n, c)| (n.to_string(), c)).collect())
    }
}

/// The started default and additional configs of a case.
pub(super) struct Configs {
    default: StartedConfig,
    additional: Vec<(String, StartedConfig)>,
}

impl Configs {
    /// Starts `default` (named "default") and the additional configs, each serving the
    /// request's `namespace`.
    pub(super) async fn start(
        default: &ExpectConfig,
        additional: &BTreeMap<String, ExpectConfig>,
        namespace: Option<&str>,
    ) -> Result<Self, String> {
        let mut started = Vec::new();
        for (name, config) in additional {
            started.push((name.clone(), config.start(name, namespace).await?));
        }
        Ok(Self {
            default: default.start("default", namespace).await?,
            additional: started,
        })
    }

    /// The default config.
    pub(super) fn config(&self) -> Config {
        self.default.config()
    }

    /// Request options with `now` and the additional configs.
    pub(super) fn options(&self, now: Option<Timestamp>) -> RequestOptions {
        RequestOptions {
            now,
            additional_configs: self
                .additional
                .iter()
                .map(|(name, started)| (name.clone(), started.config()))
                .collect(),
        }
    }

    /// Every mismatch on every config.
    pub(super) fn assert(
        &self,
        default: &ExpectConfig,
        additional: &BTreeMap<String, ExpectConfig>,
    ) -> Vec<String> {
        let mut failures = self.default.assert(default);
        for (name, started) in &self.additional {
            if let Some(expect) = additional.get(name) {
                failures.extend(started.assert(expect));
            }
        }
        failures
    }
}

/// Checks the error and (without error) the normalized result of an outcome.
pub(super) fn check_outcome(
    failures: &mut Vec<String>,
    outcome: &Outcome,
    should_err: bool,
    expected: ReconcileResult,
) {
    match (&outcome.error, should_err) {
        (None, true) => failures.push("expected an error, got none".into()),
        (Some(err), false) => failures.push(format!("unexpected error: {err}")),
        _ => {}
    }
    let actual = outcome.result.normalized();
    let expected = expected.normalized();
    if outcome.error.is_none() && actual != expected {
        let show = |r: &ReconcileResult| format!("{r:#?}");
        failures.push(format!(
            "ExpectedResult differs (-expected, +actual):\n{}",
            diff(&show(&expected), &show(&actual))
        ));
    }
}

/// Compares a stashed value with the expected one; `Some` describes the mismatch.
type StashCheck = Arc<dyn Fn(&Stash) -> Option<String> + Send + Sync>;

/// A value in the stash under a key: stored before a test, or expected after it.
#[derive(Clone)]
pub struct StashedValue {
    key: String,
    store: Arc<dyn Fn(&Stash) + Send + Sync>,
    check: StashCheck,
}

impl StashedValue {
    /// `value` under `key`; compared as JSON, ignoring timing fields.
    pub fn new<T>(key: &str, value: T) -> Self
    where
        T: Serialize + Clone + Any + Send + Sync,
    {
        let stored = value.clone();
        let key_owned = key.to_string();
        let store_key = key_owned.clone();
        let check_key = key_owned.clone();
        Self {
            key: key_owned,
            store: Arc::new(move |stash| stash.store(&store_key, stored.clone())),
            check: Arc::new(move |stash| {
                let Some(actual) = stash.retrieve::<T>(&check_key) else {
                    return Some("not stashed (or of another type)".into());
                };
                let json = |v: &T| serde_json::to_value(v).unwrap_or_default();
                let (e, a) = normalized(&json(&value), &json(&actual), Compare::Write);
                (e != a)
                    .then(|| format!("(-expected, +actual):\n{}", diff(&pretty(&e), &pretty(&a))))
            }),
        }
    }

    /// That nothing is stashed under `key` (reconciler.io's expected `nil`); only for
    /// expectations, storing it does nothing.
    pub fn absent(key: &str) -> Self {
        let check_key = key.to_string();
        Self {
            key: key.to_string(),
            store: Arc::new(|_| {}),
            check: Arc::new(move |stash| {
                stash
                    .has(&check_key)
                    .then(|| "is stashed, expected nothing".into())
            }),
        }
    }

    /// Stores the value.
    pub(super) fn store(&self, stash: &Stash) {
        (self.store)(stash);
    }

    /// The mismatch with what the stash holds, if any.
    pub(super) fn check(&self, stash: &Stash) -> Option<String> {
        (self.check)(stash).map(|m| format!("ExpectStashedValues[{:?}] {m}", self.key))
    }
}

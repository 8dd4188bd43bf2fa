//! `ReconcilerTestCase`: a table test of a root reconciler (`ResourceReconciler`,
//! `AggregateReconciler`) for one request.

use std::collections::BTreeMap;

use jiff::Timestamp;

use super::case::{
    Callback, Configs, DEADLINE, TestCase, TestSuite, TestTable, case_identity, check_outcome,
};
use super::config::ExpectConfig;
use crate::object::ObjectKey;
use crate::reconcilers::{Config, Outcome, ReconcileResult, RootReconciler};

/// Checks the outcome of a root reconcile beyond the result and error.
pub type VerifyOutcome = Box<dyn Fn(&Outcome) -> Result<(), String> + Send + Sync>;

/// One test of a root reconciler (reconciler.io's `ReconcilerTestCase`): the objects the
/// cluster holds, the request, and every write, event and track the reconcile must make, in
/// order. Run in a [`ReconcilerTestSuite`] (in order) or [`ReconcilerTests`] (named).
///
/// ```no_run
/// use dynrec::object::ObjectKey;
/// use dynrec::prelude::*;
/// use dynrec::testing::{ExpectConfig, ReconcilerTestCase, ReconcilerTestSuite};
///
/// # fn widgets(config: &Config) -> ResourceReconciler { unimplemented!() }
/// # async fn test(widget_crd: DynamicObject, widget: DynamicObject, ready: DynamicObject) {
/// ReconcilerTestSuite::from(vec![ReconcilerTestCase {
///     name: "is Ready".into(),
///     request: ObjectKey::of(&widget).unwrap(),
///     config: ExpectConfig {
///         given_api_resources: vec![widget_crd],
///         given_objects: vec![widget],
///         expect_status_updates: vec![ready],
///         ..Default::default()
///     },
///     ..Default::default()
/// }])
/// .run(|_case, config| Box::new(widgets(config)))
/// .await;
/// # }
/// ```
pub struct ReconcilerTestCase {
    /// The case's name (a table's key replaces it).
    pub name: String,
    /// Runs only this case (and fails the suite, so that focus is not committed).
    pub focus: bool,
    /// Skips this case.
    pub skip: bool,
    /// The request to reconcile.
    pub request: ObjectKey,
    /// The request's "now" (default: the wall clock).
    pub now: Option<Timestamp>,
    /// The default config's givens and expectations.
    pub config: ExpectConfig,
    /// Further named configs (for `WithConfig`).
    pub additional_configs: BTreeMap<String, ExpectConfig>,
    /// Whether the reconcile must fail.
    pub should_err: bool,
    /// The expected result (compared normalized, when there is no error).
    pub expected_result: ReconcileResult,
    /// Further checks of the outcome.
    pub verify: Option<VerifyOutcome>,
    /// Runs before the reconciler is built.
    pub prepare: Option<Callback>,
    /// Runs after the assertions.
    pub clean_up: Option<Callback>,
}

impl Default for ReconcilerTestCase {
    fn default() -> Self {
        Self {
            name: String::new(),
            focus: false,
            skip: false,
            request: ObjectKey::cluster(""),
            now: None,
            config: ExpectConfig::default(),
            additional_configs: BTreeMap::new(),
            should_err: false,
            expected_result: ReconcileResult::done(),
            verify: None,
            prepare: None,
            clean_up: None,
        }
    }
}

/// Named root-reconciler tests.
pub type ReconcilerTests = TestTable<ReconcilerTestCase>;

/// Ordered root-reconciler tests.
pub type ReconcilerTestSuite = TestSuite<ReconcilerTestCase>;

impl TestCase for ReconcilerTestCase {
    type Reconciler = Box<dyn RootReconciler>;

    case_identity!();

    async fn run(self, factory: &dyn Fn(&Self, &Config) -> Self::Reconciler) -> Vec<String> {
        let configs = match Configs::start(
            &self.config,
            &self.additional_configs,
            self.request.namespace.as_deref(),
        )
        .await
        {
            Ok(configs) => configs,
            Err(err) => return vec![err],
        };
        let config = configs.config();
        if let Some(prepare) = &self.prepare
            && let Err(err) = prepare(&config)
        {
            return vec![format!("prepare failed: {err}")];
        }
        let reconciler = factory(&self, &config);
        if let Err(err) = reconciler.validate() {
            return vec![format!("invalid reconciler: {err}")];
        }
        let reconcile = reconciler.reconcile_with(&self.request, configs.options(self.now));
        let Ok(outcome) = tokio::time::timeout(DEADLINE, reconcile).await else {
            return vec![format!("reconcile did not finish within {DEADLINE:?}")];
        };
        let mut failures = Vec::new();
        check_outcome(
            &mut failures,
            &outcome,
            self.should_err,
            self.expected_result,
        );
        if let Some(verify) = &self.verify
            && let Err(err) = verify(&outcome)
        {
            failures.push(format!("verify failed: {err}"));
        }
        failures.extend(configs.assert(&self.config, &self.additional_configs));
        if let Some(clean_up) = &self.clean_up
            && let Err(err) = clean_up(&config)
        {
            failures.push(format!("clean up failed: {err}"));
        }
        failures
    }
}

//! `SubReconcilerTestCase`: a table test of a sub-reconciler on one resource.

use std::collections::{BTreeMap, VecDeque};
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use jiff::Timestamp;
use kube::api::DynamicObject;

use super::case::{
    Callback, Configs, DEADLINE, StashedValue, TestCase, TestSuite, TestTable, case_identity,
    check_outcome,
};
use super::config::ExpectConfig;
use super::diff::{Compare, diff, normalized, pretty};
use crate::object::{Gvk, ObjectKey};
use crate::reconcilers::{Config, Context, Draft, Outcome, ReconcileResult, SubReconciler};

/// Checks the resource and outcome of a sub-reconcile beyond the expectations.
pub type VerifyResource = Box<dyn Fn(&DynamicObject, &Outcome) -> Result<(), String> + Send + Sync>;

/// One test of a sub-reconciler (reconciler.io's `SubReconcilerTestCase`).
pub struct SubReconcilerTestCase {
    /// The case's name (a table's key replaces it).
    pub name: String,
    /// Runs only this case (and fails the suite, so that focus is not committed).
    pub focus: bool,
    /// Skips this case.
    pub skip: bool,
    /// The resource reconciled (resourceVersion "999" unless set); also a given object.
    pub resource: DynamicObject,
    /// The request's "now" (default: the wall clock).
    pub now: Option<Timestamp>,
    /// The default config's givens and expectations.
    pub config: ExpectConfig,
    /// Further named configs (for `WithConfig`).
    pub additional_configs: BTreeMap<String, ExpectConfig>,
    /// Values in the stash before the reconcile.
    pub given_stashed_values: Vec<StashedValue>,
    /// Values expected in the stash after it (other keys are not checked).
    pub expect_stashed_values: Vec<StashedValue>,
    /// The resource expected after the reconcile (default: unchanged).
    pub expect_resource: Option<DynamicObject>,
    /// Whether the reconcile must fail.
    pub should_err: bool,
    /// Whether the reconcile must panic.
    pub should_panic: bool,
    /// The expected result (compared normalized, when there is no error).
    pub expected_result: ReconcileResult,
    /// Further checks.
    pub verify: Option<VerifyResource>,
    /// Runs before the reconciler is built.
    pub prepare: Option<Callback>,
    /// Runs after the assertions.
    pub clean_up: Option<Callback>,
    /// Further reconciles by the same reconciler instance, run in order after this one, for
    /// reconcilers that keep state between requests (reconciler.io's `AdditionalReconciles`).
    /// Each is a case of its own (resource, now, configs, stash and expectations, all fresh)
    /// except that the factory is not called again; its failures are labelled with its index
    /// and name. `skip` skips one (and its own); `focus` is not allowed there; their own
    /// additional reconciles run right after them.
    pub additional_reconciles: Vec<SubReconcilerTestCase>,
}

impl Default for SubReconcilerTestCase {
    fn default() -> Self {
        Self {
            name: String::new(),
            focus: false,
            skip: false,
            resource: DynamicObject {
                types: None,
                metadata: Default::default(),
                data: serde_json::json!({}),
            },
            now: None,
            config: ExpectConfig::default(),
            additional_configs: BTreeMap::new(),
            given_stashed_values: Vec::new(),
            expect_stashed_values: Vec::new(),
            expect_resource: None,
            should_err: false,
            should_panic: false,
            expected_result: ReconcileResult::done(),
            verify: None,
            prepare: None,
            clean_up: None,
            additional_reconciles: Vec::new(),
        }
    }
}

/// Named sub-reconciler tests.
pub type SubReconcilerTests = TestTable<SubReconcilerTestCase>;

/// Ordered sub-reconciler tests.
pub type SubReconcilerTestSuite = TestSuite<SubReconcilerTestCase>;

/// The object with resourceVersion "999" unless it has one.
fn with_default_rv(object: &DynamicObject) -> DynamicObject {
    let mut object = object.clone();
    object
        .metadata
        .resource_version
        .get_or_insert_with(|| "999".into());
    object
}

impl TestCase for SubReconcilerTestCase {
    type Reconciler = Box<dyn SubReconciler>;

    case_identity!();

    async fn run(mut self, factory: &dyn Fn(&Self, &Config) -> Self::Reconciler) -> Vec<String> {
        let additional = std::mem::take(&mut self.additional_reconciles);
        let started = match self.start().await {
            Ok(started) => started,
            Err(failure) => return vec![failure],
        };
        let reconciler = factory(&self, &started.config);
        let mut failures = self.exercise(started, reconciler.as_ref()).await;
        let mut queue = VecDeque::from(additional);
        let mut index = 0;
        while let Some(mut case) = queue.pop_front() {
            index += 1;
            if case.skip {
                continue;
            }
            let label = format!("additional reconcile {index} {:?}", case.name);
            for nested in std::mem::take(&mut case.additional_reconciles)
                .into_iter()
                .rev()
            {
                queue.push_front(nested);
            }
            let found = match case.focus {
                true => vec!["focus is not allowed in additional reconciles".into()],
                false => match case.start().await {
                    Ok(started) => case.exercise(started, reconciler.as_ref()).await,
                    Err(failure) => vec![failure],
                },
            };
            failures.extend(found.into_iter().map(|f| format!("{label}: {f}")));
        }
        failures
    }
}

/// A case ready to reconcile: its resource, started configs and request context.
struct Started {
    resource: DynamicObject,
    configs: Configs,
    config: Config,
    ctx: Context,
}

impl SubReconcilerTestCase {
    /// Starts the configs (the resource is a given object of the default one), runs
    /// `prepare` and builds the context with the given stashed values.
    async fn start(&self) -> Result<Started, String> {
        let resource = with_default_rv(&self.resource);
        let (gvk, key) = match (Gvk::of(&resource), ObjectKey::of(&resource)) {
            (Ok(gvk), Ok(key)) => (gvk, key),
            _ => return Err("the test resource needs apiVersion, kind and name".into()),
        };
        let mut given = self.config.clone();
        given.given_objects.push(resource.clone());
        given.api_given_objects.push(resource.clone());
        let configs =
            Configs::start(&given, &self.additional_configs, key.namespace.as_deref()).await?;
        let config = configs.config();
        if let Some(prepare) = &self.prepare
            && let Err(err) = prepare(&config)
        {
            return Err(format!("prepare failed: {err}"));
        }
        let options = configs.options(self.now);
        let now = options.now.unwrap_or_else(Timestamp::now);
        let ctx = Context::new(key, gvk, config.clone(), now)
            .with_additional_configs(options.additional_configs);
        for value in &self.given_stashed_values {
            value.store(ctx.stash());
        }
        Ok(Started {
            resource,
            configs,
            config,
            ctx,
        })
    }

    /// Validates and runs `reconciler` on a started case, then checks every expectation.
    async fn exercise(&self, started: Started, reconciler: &dyn SubReconciler) -> Vec<String> {
        let Started {
            resource,
            configs,
            config,
            ctx,
        } = started;
        if let Err(err) = reconciler.validate() {
            return vec![format!("invalid reconciler: {err}")];
        }
        let mut resource = Draft::new(resource);
        let reconcile = AssertUnwindSafe(reconciler.reconcile(&ctx, &mut resource)).catch_unwind();
        let Ok(caught) = tokio::time::timeout(DEADLINE, reconcile).await else {
            return vec![format!("reconcile did not finish within {DEADLINE:?}")];
        };
        let mut failures = Vec::new();
        let outcome = match (caught, self.should_panic) {
            (Ok(outcome), false) => outcome,
            (Ok(_), true) => return vec!["expected a panic, got none".into()],
            (Err(_), true) => return failures,
            (Err(panic), false) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
                return vec![format!("unexpected panic: {}", message.unwrap_or_default())];
            }
        };
        check_outcome(
            &mut failures,
            &outcome,
            self.should_err,
            self.expected_result,
        );
        let expected = with_default_rv(self.expect_resource.as_ref().unwrap_or(&self.resource));
        let json = |o: &DynamicObject| serde_json::to_value(o).unwrap_or_default();
        let (e, a) = normalized(&json(&expected), &json(&resource), Compare::Resource);
        if e != a {
            failures.push(format!(
                "ExpectResource differs (-expected, +actual):\n{}",
                diff(&pretty(&e), &pretty(&a))
            ));
        }
        failures.extend(
            self.expect_stashed_values
                .iter()
                .filter_map(|v| v.check(ctx.stash())),
        );
        if let Some(verify) = &self.verify
            && let Err(err) = verify(&resource, &outcome)
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

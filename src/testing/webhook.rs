//! `AdmissionWebhookTestCase`: a table test of an admission webhook adapter on one
//! admission request (reconciler.io's `AdmissionWebhookTestCase`).

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use jiff::Timestamp;
use kube::core::admission::AdmissionResponse;
use serde_json::Value;

use super::case::{
    Callback, DEADLINE, StashedValue, TestCase, TestSuite, TestTable, case_identity,
};
use super::config::ExpectConfig;
use super::diff::{diff, pretty};
use crate::reconcilers::{Config, Stash};
use crate::webhook::{AdmissionWebhookAdapter, HttpRequestInfo};

/// One test of an admission webhook adapter.
pub struct AdmissionWebhookTestCase {
    /// The case's name (a table's key replaces it).
    pub name: String,
    /// Runs only this case (and fails the suite, so that focus is not committed).
    pub focus: bool,
    /// Skips this case.
    pub skip: bool,
    /// The admission request (`AdmissionReview.request`) as the API server sends it.
    pub request: Value,
    /// The HTTP request it arrives in (default: a POST to `/`).
    pub http_request: Option<HttpRequestInfo>,
    /// The request's "now" (default: the wall clock).
    pub now: Option<Timestamp>,
    /// The cluster's givens and the writes and tracks expected there.
    pub config: ExpectConfig,
    /// Values in the stash before the request is handled.
    pub given_stashed_values: Vec<StashedValue>,
    /// Values expected in the stash after it (other keys are not checked).
    pub expect_stashed_values: Vec<StashedValue>,
    /// The expected response; its uid is the request's and its code 200 when unset, as
    /// for the response the adapter completes.
    pub expected_response: AdmissionResponse,
    /// Whether handling the request must panic.
    pub should_panic: bool,
    /// Runs before the adapter is built.
    pub prepare: Option<Callback>,
    /// Runs after the assertions.
    pub clean_up: Option<Callback>,
}

impl Default for AdmissionWebhookTestCase {
    fn default() -> Self {
        Self {
            name: String::new(),
            focus: false,
            skip: false,
            request: Value::Null,
            http_request: None,
            now: None,
            config: ExpectConfig::default(),
            given_stashed_values: Vec::new(),
            expect_stashed_values: Vec::new(),
            expected_response: AdmissionResponse::invalid(""),
            should_panic: false,
            prepare: None,
            clean_up: None,
        }
    }
}

/// Named webhook tests.
pub type AdmissionWebhookTests = TestTable<AdmissionWebhookTestCase>;

/// Ordered webhook tests.
pub type AdmissionWebhookTestSuite = TestSuite<AdmissionWebhookTestCase>;

impl TestCase for AdmissionWebhookTestCase {
    type Reconciler = AdmissionWebhookAdapter;

    case_identity!();

    async fn run(self, factory: &dyn Fn(&Self, &Config) -> Self::Reconciler) -> Vec<String> {
        if !self.request.is_object() {
            return vec!["the test case needs a request (an AdmissionRequest object)".into()];
        }
        let namespace = self.request.get("namespace").and_then(Value::as_str);
        let started = match self.config.start("default", namespace).await {
            Ok(started) => started,
            Err(failure) => return vec![failure],
        };
        let config = started.config();
        if let Some(prepare) = &self.prepare
            && let Err(err) = prepare(&config)
        {
            return vec![format!("prepare failed: {err}")];
        }
        let adapter = factory(&self, &config);
        if let Err(err) = adapter.validate() {
            return vec![format!("invalid webhook: {err}")];
        }
        let http = self
            .http_request
            .clone()
            .unwrap_or_else(|| HttpRequestInfo::post("/"));
        let stash = parking_lot::Mutex::new(Stash::default());
        let seed = |ctx: &crate::reconcilers::Context| {
            for value in &self.given_stashed_values {
                value.store(ctx.stash());
            }
            *stash.lock() = ctx.stash().clone();
        };
        let now = self.now.unwrap_or_else(Timestamp::now);
        let handled = AssertUnwindSafe(adapter.handle_seeded(&http, &self.request, now, &seed))
            .catch_unwind();
        let Ok(caught) = tokio::time::timeout(DEADLINE, handled).await else {
            return vec![format!("the webhook did not answer within {DEADLINE:?}")];
        };
        let response = match (caught, self.should_panic) {
            (Ok(response), false) => response,
            (Ok(_), true) => return vec!["expected a panic, got none".into()],
            (Err(_), true) => return Vec::new(),
            (Err(_), false) => return vec!["unexpected panic".into()],
        };
        let mut failures = Vec::new();
        let expected = self.completed(&self.expected_response);
        let (e, a) = (rendered(&expected), rendered(&response));
        if e != a {
            failures.push(format!(
                "ExpectedResponse differs (-expected, +actual):\n{}",
                diff(&pretty(&e), &pretty(&a))
            ));
        }
        let stash = stash.lock().clone();
        failures.extend(
            self.expect_stashed_values
                .iter()
                .filter_map(|v| v.check(&stash)),
        );
        failures.extend(started.assert(&self.config));
        if let Some(clean_up) = &self.clean_up
            && let Err(err) = clean_up(&config)
        {
            failures.push(format!("clean up failed: {err}"));
        }
        failures
    }
}

impl AdmissionWebhookTestCase {
    /// The expected response as the adapter completes it: the request's uid, code 200.
    fn completed(&self, expected: &AdmissionResponse) -> AdmissionResponse {
        let mut expected = expected.clone();
        if expected.uid.is_empty() {
            let uid = self.request.get("uid").and_then(Value::as_str);
            expected.uid = uid.unwrap_or_default().to_string();
        }
        if expected.result.code == 0 {
            expected.result.code = 200;
        }
        expected
    }
}

/// A response as JSON, its patch decoded, for a readable comparison.
fn rendered(response: &AdmissionResponse) -> Value {
    let mut value = serde_json::to_value(response).unwrap_or_default();
    if let Some(patch) = &response.patch {
        value["patch"] = serde_json::from_slice(patch)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(patch).into_owned()));
    }
    value
}

//! Table tests for reconcilers, in the style of reconciler.io's `testing` package (behind the
//! `testing` feature).
//!
//! A test case gives objects, tracks and stashed values, runs a reconciler against an
//! embedded API server behind a recording layer, and compares, in order, every write,
//! event and track with its expectations. Reactors in the same layer fail requests
//! ([`induce_failure`]). Differences from reconciler.io: objects are seeded into a real
//! (embedded) server, so uid, generation and managedFields are compared only when an
//! expectation sets them; resourceVersions are cluster-wide, as in a real cluster, so
//! creates get resourceVersions above "999", not "1", and every write (events included)
//! takes the next one; and the tracker can only confirm expected tracks, not list
//! unexpected ones.

pub mod assertion_tree;
mod case;
mod case_update;
pub mod chainsaw;
mod config;
mod crash_points;
mod crash_state;
mod crash_writes;
mod definition_cases;
mod definition_live;
mod definition_run;
mod diff;
mod expectations;
mod object_manager;
mod objects;
mod reactor;
mod reconciler;
mod recorded;
mod recording;
mod refs;
mod stub;
mod subreconciler;
mod value_diff;
mod webhook;

pub use case::{Callback, Failures, StashedValue, TestCase, TestSuite, TestTable};
pub use case_update::{ExpectAt, rewrite_expectations};
pub use config::{ExpectConfig, StartedConfig};
pub use crash_points::{
    Crash, CrashFinding, CrashPoints, CrashReport, ReconcilerFactory, SETTLE_ROUNDS, explore_case,
};
pub use crash_writes::Write;
pub use definition_cases::{
    CaseError, DefinitionCase, DefinitionCases, Expect, Failure, RequestKey, Step, parse_cases,
};
pub use definition_live::{LIVE_TIMEOUT, live_skip_reason, run_case_live};
pub use definition_run::{Phase, expectations, run_case};
pub use object_manager::{
    OBJECT_MANAGER_ACTUAL, OBJECT_MANAGER_DESIRED, OBJECT_MANAGER_RESULT, ObjectManagerHarness,
};
pub use objects::{TestObject, crd};
pub use reactor::{Action, ApiStatus, InduceFailure, Reactor, induce_failure};
pub use reconciler::{ReconcilerTestCase, ReconcilerTestSuite, ReconcilerTests, VerifyOutcome};
pub use recorded::Recorded;
pub use refs::{
    ApplyRef, DeleteCollectionRef, DeleteRef, Event, MERGE_PATCH, PatchRef, TrackRequest,
};
pub use stub::StubObjectManager;
pub use subreconciler::{
    SubReconcilerTestCase, SubReconcilerTestSuite, SubReconcilerTests, VerifyResource,
};
pub use webhook::{AdmissionWebhookTestCase, AdmissionWebhookTestSuite, AdmissionWebhookTests};

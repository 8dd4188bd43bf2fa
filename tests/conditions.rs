//! Condition sets on the `status.conditions[]` of any `DynamicObject` (reconciler.io
//! `apis.ConditionSet`).

use dynrec::object::{ConditionError, ConditionSet, StatusExt};
use jiff::Timestamp;
use kube::api::DynamicObject;
use serde_json::{Value, json};

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).expect("test objects are valid")
}

/// A custom resource of a kind unknown at compile time, with no status.
fn widget() -> DynamicObject {
    object(json!({
        "apiVersion": "example.dev/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default", "generation": 4},
        "spec": {"size": 3}
    }))
}

fn at(second: i64) -> Timestamp {
    Timestamp::from_second(second).expect("valid test time")
}

/// Each condition as (type, status, reason, message).
fn summary(obj: &DynamicObject) -> Vec<(String, String, String, String)> {
    obj.conditions()
        .expect("conditions are well formed")
        .into_iter()
        .map(|c| {
            (
                c.type_,
                c.status,
                c.reason.unwrap_or_default(),
                c.message.unwrap_or_default(),
            )
        })
        .collect()
}

fn row(type_: &str, status: &str, reason: &str, message: &str) -> (String, String, String, String) {
    (type_.into(), status.into(), reason.into(), message.into())
}

#[test]
fn sets_name_their_happy_condition_and_deduplicate_dependents() {
    let living = ConditionSet::living(&["B", "A", "B", "Ready"]);
    assert_eq!(living.happy(), "Ready");
    assert_eq!(living.happy_reason(), "Ready");
    assert_eq!(living.dependents(), ["B", "A"]);

    let batch = ConditionSet::batch(&["Succeeded", "Job"]).with_happy_reason("Completed");
    assert_eq!(batch.happy(), "Succeeded");
    assert_eq!(batch.happy_reason(), "Completed");
    assert_eq!(batch.dependents(), ["Job"]);
}

#[test]
fn initialize_adds_status_to_an_object_without_one() {
    let set = ConditionSet::living(&["Service", "Deployment"]);
    let mut obj = widget();
    set.manage(&mut obj, at(1_700_000_000))
        .initialize()
        .unwrap();

    let transition = "2023-11-14T22:13:20Z";
    assert_eq!(
        obj.data["status"],
        json!({"conditions": [
            {"type": "Deployment", "status": "Unknown", "reason": "Initializing", "message": "", "lastTransitionTime": transition},
            {"type": "Ready", "status": "Unknown", "reason": "Initializing", "message": "", "lastTransitionTime": transition},
            {"type": "Service", "status": "Unknown", "reason": "Initializing", "message": "", "lastTransitionTime": transition},
        ]})
    );
    assert_eq!(obj.data["spec"], json!({"size": 3}));
}

#[test]
fn initialize_keeps_other_status_fields_and_existing_conditions() {
    let set = ConditionSet::living(&["Deployment", "Service"]);
    let mut obj = widget();
    obj.data["status"] = json!({
        "replicas": 2,
        "observedGeneration": 3,
        "conditions": [{"type": "Deployment", "status": "False", "reason": "Failed", "message": "no", "lastTransitionTime": "2020-01-01T00:00:00Z"}]
    });
    set.manage(&mut obj, at(1_700_000_000))
        .initialize()
        .unwrap();

    assert_eq!(obj.data["status"]["replicas"], 2);
    assert_eq!(obj.data["status"]["observedGeneration"], 3);
    assert_eq!(
        summary(&obj),
        [
            row("Deployment", "False", "Failed", "no"),
            row("Ready", "Unknown", "Initializing", ""),
            row("Service", "Unknown", "Initializing", ""),
        ]
    );
    assert_eq!(
        obj.data["status"]["conditions"][0]["lastTransitionTime"],
        "2020-01-01T00:00:00Z"
    );
}

#[test]
fn initialize_under_a_true_happy_condition_adds_true_dependents() {
    let set = ConditionSet::living(&["Deployment"]);
    let mut obj = widget();
    obj.data["status"] =
        json!({"conditions": [{"type": "Ready", "status": "True", "reason": "Ready"}]});
    set.manage(&mut obj, at(100)).initialize().unwrap();
    assert_eq!(
        summary(&obj),
        [
            row("Deployment", "True", "Initializing", ""),
            row("Ready", "True", "Ready", ""),
        ]
    );
}

#[test]
fn mark_true_makes_the_set_happy_once_every_dependent_is_true() {
    let set = ConditionSet::living(&["Deployment", "Service"]).with_happy_reason("AllGood");
    let mut obj = widget();
    let mut conditions = set.manage(&mut obj, at(100));
    conditions.initialize().unwrap();

    conditions
        .mark_true("Deployment", "Available", "3 replicas")
        .unwrap();
    assert!(!conditions.is_happy().unwrap());
    conditions.mark_true("Service", "Addressable", "").unwrap();
    assert!(conditions.is_happy().unwrap());
    let ready = conditions.get_condition("Ready").unwrap().unwrap();
    assert_eq!(
        (ready.reason.as_deref(), ready.message.as_deref()),
        (Some("AllGood"), Some(""))
    );
    assert_eq!(
        summary(&obj),
        [
            row("Deployment", "True", "Available", "3 replicas"),
            row("Ready", "True", "AllGood", ""),
            row("Service", "True", "Addressable", ""),
        ]
    );
}

#[test]
fn mark_true_without_dependents_leaves_the_happy_condition_alone() {
    let set = ConditionSet::living(&[]);
    let mut obj = widget();
    let mut conditions = set.manage(&mut obj, at(100));
    conditions.initialize().unwrap();
    conditions.mark_true("Extra", "Fine", "").unwrap();
    assert!(!conditions.is_happy().unwrap());
    assert_eq!(
        summary(&obj),
        [
            row("Extra", "True", "Fine", ""),
            row("Ready", "Unknown", "Initializing", ""),
        ]
    );
}

#[test]
fn mark_false_on_a_dependent_makes_the_set_unhappy() {
    let set = ConditionSet::batch(&["Job"]);
    let mut obj = widget();
    let mut conditions = set.manage(&mut obj, at(100));
    conditions.mark_true("Job", "Done", "").unwrap();
    assert!(conditions.is_happy().unwrap());

    conditions
        .mark_false("Other", "Meh", "not a dependent")
        .unwrap();
    assert!(conditions.is_happy().unwrap());
    conditions.mark_false("Job", "Failed", "exit 1").unwrap();
    assert!(!conditions.is_happy().unwrap());
    assert_eq!(
        summary(&obj),
        [
            row("Job", "False", "Failed", "exit 1"),
            row("Other", "False", "Meh", "not a dependent"),
            row("Succeeded", "False", "Failed", "exit 1"),
        ]
    );
}

#[test]
fn mark_unknown_on_a_dependent_makes_the_set_unknown() {
    let set = ConditionSet::living(&["A", "B"]);
    let mut obj = widget();
    let mut conditions = set.manage(&mut obj, at(100));
    conditions.mark_true("A", "Up", "").unwrap();
    conditions.mark_true("B", "Up", "").unwrap();
    conditions
        .mark_unknown("C", "Hmm", "not a dependent")
        .unwrap();
    assert!(conditions.is_happy().unwrap());

    conditions.mark_unknown("A", "Waiting", "for A").unwrap();
    assert_eq!(
        summary(&obj),
        [
            row("A", "Unknown", "Waiting", "for A"),
            row("B", "True", "Up", ""),
            row("C", "Unknown", "Hmm", "not a dependent"),
            row("Ready", "Unknown", "Waiting", "for A"),
        ]
    );
}

#[test]
fn mark_unknown_never_hides_a_false_dependent() {
    let set = ConditionSet::living(&["A", "B"]);
    let mut obj = widget();
    obj.data["status"] = json!({"conditions": [
        {"type": "B", "status": "False", "reason": "Broken", "message": ""},
        {"type": "Ready", "status": "True", "reason": "Ready", "message": ""},
    ]});
    let mut conditions = set.manage(&mut obj, at(100));
    conditions.mark_unknown("A", "Waiting", "for A").unwrap();
    assert_eq!(
        summary(&obj),
        [
            row("A", "Unknown", "Waiting", "for A"),
            row("B", "False", "Broken", ""),
            row("Ready", "False", "Waiting", "for A"),
        ]
    );

    // Already false: the happy condition keeps its reason.
    let mut conditions = set.manage(&mut obj, at(200));
    conditions.mark_unknown("A", "Still", "waiting").unwrap();
    let ready = conditions.get_condition("Ready").unwrap().unwrap();
    assert_eq!(ready.reason.as_deref(), Some("Waiting"));
}

#[test]
fn transition_time_changes_only_with_the_condition() {
    let set = ConditionSet::living(&["A"]);
    let mut obj = widget();
    set.manage(&mut obj, at(100))
        .mark_false("A", "Down", "x")
        .unwrap();
    set.manage(&mut obj, at(200))
        .mark_false("A", "Down", "x")
        .unwrap();
    let time = |obj: &DynamicObject, i: usize| {
        obj.data["status"]["conditions"][i]["lastTransitionTime"]
            .as_str()
            .map(str::to_owned)
    };
    assert_eq!(time(&obj, 0).as_deref(), Some("1970-01-01T00:01:40Z"));
    assert_eq!(time(&obj, 1).as_deref(), Some("1970-01-01T00:01:40Z"));

    set.manage(&mut obj, at(300))
        .mark_false("A", "Down", "y")
        .unwrap();
    assert_eq!(time(&obj, 0).as_deref(), Some("1970-01-01T00:05:00Z"));
}

#[test]
fn a_missing_message_equals_an_empty_one() {
    let set = ConditionSet::living(&["A"]);
    let mut obj = widget();
    obj.data["status"] = json!({"conditions": [
        {"type": "A", "status": "True", "reason": "Up", "lastTransitionTime": "2020-01-01T00:00:00Z"},
    ]});
    set.manage(&mut obj, at(100))
        .mark_true("A", "Up", "")
        .unwrap();
    assert_eq!(
        obj.data["status"]["conditions"][0],
        json!({"type": "A", "status": "True", "reason": "Up", "lastTransitionTime": "2020-01-01T00:00:00Z"})
    );
}

#[test]
fn transition_times_are_whole_seconds() {
    let set = ConditionSet::living(&[]);
    let mut obj = widget();
    let now = Timestamp::from_millisecond(1_700_000_000_999).unwrap();
    set.manage(&mut obj, now).initialize().unwrap();
    assert_eq!(
        obj.data["status"]["conditions"][0]["lastTransitionTime"],
        "2023-11-14T22:13:20Z"
    );
}

#[test]
fn only_non_terminal_conditions_can_be_cleared() {
    let set = ConditionSet::living(&["A"]);
    let mut obj = widget();
    obj.data["status"] = json!({"conditions": [
        {"type": "Z", "status": "True"},
        {"type": "Ready", "status": "True"},
        {"type": "B", "status": "True"},
        {"type": "A", "status": "True"},
    ]});
    let mut conditions = set.manage(&mut obj, at(100));
    for terminal in ["Ready", "A"] {
        let err = conditions.clear_condition(terminal).unwrap_err();
        assert!(matches!(err, ConditionError::ClearTerminal(ref t) if t == terminal));
    }
    assert!(!conditions.clear_condition("Missing").unwrap());
    assert!(conditions.clear_condition("B").unwrap());
    let types: Vec<String> = obj
        .conditions()
        .unwrap()
        .into_iter()
        .map(|c| c.type_)
        .collect();
    assert_eq!(types, ["A", "Ready", "Z"]);
}

#[test]
fn malformed_conditions_are_errors() {
    let set = ConditionSet::living(&["A"]);
    let mut obj = widget();
    obj.data["status"] = json!({"conditions": "Ready"});
    let mut conditions = set.manage(&mut obj, at(100));
    assert!(matches!(
        conditions.mark_true("A", "Up", ""),
        Err(ConditionError::Path(_))
    ));
    assert!(conditions.is_happy().is_err());
    assert!(obj.data["status"]["conditions"] == "Ready");
}

#[test]
fn observed_generation_follows_metadata_generation() {
    let mut obj = widget();
    obj.observe_generation().unwrap();
    assert_eq!(obj.data["status"]["observedGeneration"], 4);
}

#[test]
fn works_on_an_object_with_an_empty_body() {
    let gvk = kube::api::GroupVersionKind::gvk("example.dev", "v1", "Widget");
    let mut obj = DynamicObject::new("w2", &kube::api::ApiResource::from_gvk(&gvk));
    assert!(obj.data.is_null());
    let set = ConditionSet::living(&[]);
    set.manage(&mut obj, at(100)).initialize().unwrap();
    assert_eq!(summary(&obj), [row("Ready", "Unknown", "Initializing", "")]);
}

#[test]
fn marking_conditions_as_they_are_leaves_a_shared_draft_uncopied() {
    use dynrec::reconcilers::Draft;
    use std::sync::Arc;
    let set = ConditionSet::living(&["A", "B"]);
    let mut obj = widget();
    obj.data["status"] = json!({"conditions": [
        {"type": "A", "status": "True", "reason": "Up", "lastTransitionTime": "2020-01-01T00:00:00Z"},
        {"type": "B", "status": "False", "reason": "Down", "message": "x", "lastTransitionTime": "2020-01-01T00:00:00Z"},
        {"type": "Ready", "status": "False", "reason": "Down", "message": "x", "lastTransitionTime": "2020-01-01T00:00:00Z"},
    ]});
    let cached = Arc::new(obj);
    let mut draft = Draft::shared(cached.clone());
    let mut conditions = set.manage(&mut draft, at(100));
    conditions.initialize().unwrap();
    conditions.mark_true("A", "Up", "").unwrap();
    conditions.mark_false("B", "Down", "x").unwrap();
    assert!(!draft.is_changed(), "nothing to change, nothing copied");

    set.manage(&mut draft, at(100))
        .mark_false("B", "Down", "y")
        .unwrap();
    assert!(draft.is_changed());
    assert_eq!(
        summary(&draft),
        [
            row("A", "True", "Up", ""),
            row("B", "False", "Down", "y"),
            row("Ready", "False", "Down", "y"),
        ]
    );
    assert_eq!(
        summary(&cached)[1],
        row("B", "False", "Down", "x"),
        "the cache's object is untouched"
    );
}

//! Fault injection: make matching requests fail with a given status, or stall, a given
//! number of times or with a given probability from a fixed seed.

use std::time::Duration;

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Deserialize;

use crate::error::ApiError;

/// Which requests a fault applies to; an absent field matches anything.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultMatch {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`.
    pub verb: Option<String>,
    /// API group ("" for core).
    pub group: Option<String>,
    /// Kind (`ConfigMap`) or plural resource name (`configmaps`).
    pub kind: Option<String>,
    /// Namespace.
    pub namespace: Option<String>,
    /// Object name.
    pub name: Option<String>,
    /// Subresource (`status`); `""` matches only requests on the main resource.
    pub subresource: Option<String>,
}

/// What a matching request gets.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum FaultAction {
    /// Answer with this status code and reason instead of serving the request.
    Fail {
        /// HTTP status code, e.g. 500.
        code: u16,
        /// `Status.reason`, e.g. `InternalError`.
        reason: String,
        /// `Status.message`; a default names the fault.
        #[serde(default)]
        message: Option<String>,
    },
    /// Wait this long before serving the request.
    Stall {
        /// Milliseconds to wait.
        millis: u64,
    },
}

/// A fault to inject.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fault {
    /// Which requests it applies to.
    #[serde(default, rename = "match")]
    pub matcher: FaultMatch,
    /// What they get.
    pub action: FaultAction,
    /// Apply to this many matching requests, then disappear (absent: forever).
    #[serde(default)]
    pub times: Option<u32>,
    /// Apply to a matching request with this probability (0..=1; absent: always).
    #[serde(default)]
    pub probability: Option<f64>,
}

impl Fault {
    /// A fault that fails matching requests with `code` and `reason`.
    pub fn fail(matcher: FaultMatch, code: u16, reason: &str) -> Self {
        Fault {
            matcher,
            action: FaultAction::Fail {
                code,
                reason: reason.into(),
                message: None,
            },
            times: None,
            probability: None,
        }
    }

    /// A fault that stalls matching requests for `delay`.
    pub fn stall(matcher: FaultMatch, delay: Duration) -> Self {
        Fault {
            matcher,
            action: FaultAction::Stall {
                millis: delay.as_millis().try_into().unwrap_or(u64::MAX),
            },
            times: None,
            probability: None,
        }
    }

    /// Applies to the first `n` matching requests only.
    pub fn times(mut self, n: u32) -> Self {
        self.times = Some(n);
        self
    }

    /// Applies to a matching request with probability `p`.
    pub fn probability(mut self, p: f64) -> Self {
        self.probability = Some(p.clamp(0.0, 1.0));
        self
    }
}

/// The request a fault is matched against.
#[derive(Debug)]
pub struct RequestFacts<'a> {
    /// The Kubernetes verb.
    pub verb: &'a str,
    /// API group.
    pub group: &'a str,
    /// Kind.
    pub kind: &'a str,
    /// Plural resource name.
    pub plural: &'a str,
    /// Namespace ("" when none).
    pub namespace: &'a str,
    /// Object name ("" for collections).
    pub name: &'a str,
    /// Subresource ("" for the main resource).
    pub subresource: &'a str,
}

impl FaultMatch {
    fn matches(&self, request: &RequestFacts) -> bool {
        let field =
            |want: &Option<String>, actual: &str| want.as_deref().is_none_or(|w| w == actual);
        field(&self.verb, request.verb)
            && field(&self.group, request.group)
            && self
                .kind
                .as_deref()
                .is_none_or(|k| k == request.kind || k == request.plural)
            && field(&self.namespace, request.namespace)
            && field(&self.name, request.name)
            && field(&self.subresource, request.subresource)
    }
}

/// What the server does about a request after consulting the faults.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Serve it.
    Serve,
    /// Wait, then serve it.
    Stall(Duration),
    /// Answer with this error.
    Fail(ApiError),
}

/// The faults in force, with the seeded random source for probabilities.
pub struct Faults {
    entries: Mutex<Vec<(u64, Fault)>>,
    next_id: Mutex<u64>,
    rng: Mutex<StdRng>,
}

impl Faults {
    /// No faults; probabilities drawn from `seed`.
    pub fn new(seed: u64) -> Self {
        Faults {
            entries: Mutex::new(Vec::new()),
            next_id: Mutex::new(0),
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
        }
    }

    /// Adds a fault; returns its id.
    pub fn add(&self, fault: Fault) -> u64 {
        let mut next = self.next_id.lock();
        *next += 1;
        self.entries.lock().push((*next, fault));
        *next
    }

    /// Removes a fault by id; whether it was there.
    pub fn remove(&self, id: u64) -> bool {
        let mut entries = self.entries.lock();
        let before = entries.len();
        entries.retain(|(i, _)| *i != id);
        entries.len() != before
    }

    /// Removes every fault.
    pub fn clear(&self) {
        self.entries.lock().clear();
    }

    /// The first fault that applies to a request decides; a fault used up disappears.
    pub fn verdict(&self, request: &RequestFacts) -> Verdict {
        let mut entries = self.entries.lock();
        let mut chosen = None;
        for (index, (_, fault)) in entries.iter_mut().enumerate() {
            if !fault.matcher.matches(request) {
                continue;
            }
            if let Some(p) = fault.probability
                && !self.rng.lock().random_bool(p.clamp(0.0, 1.0))
            {
                continue;
            }
            if let Some(times) = fault.times.as_mut() {
                *times = times.saturating_sub(1);
            }
            chosen = Some((index, fault.action.clone(), fault.times == Some(0)));
            break;
        }
        let Some((index, action, used_up)) = chosen else {
            return Verdict::Serve;
        };
        if used_up {
            entries.remove(index);
        }
        tracing::info!(
            verb = %request.verb,
            resource = request.plural,
            namespace = request.namespace,
            name = request.name,
            "injected fault"
        );
        match action {
            FaultAction::Stall { millis } => Verdict::Stall(Duration::from_millis(millis)),
            FaultAction::Fail {
                code,
                reason,
                message,
            } => Verdict::Fail(ApiError::injected(
                code,
                &reason,
                message.unwrap_or_else(|| {
                    format!(
                        "injected fault: {} {} {}/{}",
                        request.verb, request.plural, request.namespace, request.name
                    )
                }),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update_configmap() -> RequestFacts<'static> {
        RequestFacts {
            verb: "update",
            group: "",
            kind: "ConfigMap",
            plural: "configmaps",
            namespace: "default",
            name: "a",
            subresource: "",
        }
    }

    #[test]
    fn a_counted_fault_is_used_up() {
        let faults = Faults::new(1);
        let matcher = FaultMatch {
            verb: Some("update".into()),
            kind: Some("ConfigMap".into()),
            ..Default::default()
        };
        faults.add(Fault::fail(matcher, 500, "InternalError").times(1));
        assert!(matches!(faults.verdict(&update_configmap()), Verdict::Fail(e) if e.code == 500));
        assert_eq!(faults.verdict(&update_configmap()), Verdict::Serve);
    }

    #[test]
    fn matching_is_by_every_given_field() {
        let faults = Faults::new(1);
        let matcher = FaultMatch {
            name: Some("other".into()),
            ..Default::default()
        };
        faults.add(Fault::stall(matcher, Duration::from_millis(5)));
        assert_eq!(faults.verdict(&update_configmap()), Verdict::Serve);
    }

    #[test]
    fn probabilities_are_repeatable_from_the_seed() {
        let draw = |seed| {
            let faults = Faults::new(seed);
            faults.add(
                Fault::fail(FaultMatch::default(), 503, "ServiceUnavailable").probability(0.5),
            );
            (0..64)
                .map(|_| faults.verdict(&update_configmap()) != Verdict::Serve)
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        let hits = draw(7).into_iter().filter(|h| *h).count();
        assert!((10..54).contains(&hits), "{hits} of 64");
    }

    #[test]
    fn faults_parse_from_json() {
        let fault: Fault = serde_json::from_value(serde_json::json!({
            "match": {"verb": "update", "kind": "configmaps"},
            "action": {"fail": {"code": 500, "reason": "InternalError"}},
            "times": 1
        }))
        .unwrap();
        assert_eq!(fault.times, Some(1));
        let unknown =
            serde_json::from_value::<Fault>(serde_json::json!({"action": {"explode": {}}}));
        assert!(unknown.is_err());
    }
}

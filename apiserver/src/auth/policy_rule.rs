//! RBAC policy rules compared as kube does when it prevents escalation: whether one set of
//! rules covers another (`Covers` in k8s.io/component-helpers/auth/rbac/validation), the
//! uncovered rules merged for display (`CompactRules`), and their compact text
//! (`CompactString`), e.g. `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`.

use serde_json::Value;

use crate::meta;

/// One rule of a Role or ClusterRole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyRule {
    /// `apiGroups`.
    pub api_groups: Vec<String>,
    /// `resources` (`resource`, `resource/subresource`, `*/subresource` or `*`).
    pub resources: Vec<String>,
    /// `resourceNames`: empty for every name.
    pub resource_names: Vec<String>,
    /// `nonResourceURLs` (a trailing `*` matches any suffix).
    pub non_resource_urls: Vec<String>,
    /// `verbs`.
    pub verbs: Vec<String>,
}

impl PolicyRule {
    /// A rule as a Role's `rules[]` item holds it.
    pub fn from_json(rule: &Value) -> Self {
        PolicyRule {
            api_groups: meta::string_list(&rule["apiGroups"]),
            resources: meta::string_list(&rule["resources"]),
            resource_names: meta::string_list(&rule["resourceNames"]),
            non_resource_urls: meta::string_list(&rule["nonResourceURLs"]),
            verbs: meta::string_list(&rule["verbs"]),
        }
    }

    /// The rules of a role's `rules` list.
    pub fn list(rules: &Value) -> Vec<Self> {
        rules
            .as_array()
            .map(|rules| rules.iter().map(Self::from_json).collect())
            .unwrap_or_default()
    }

    /// Every permission on everything: what `cluster-admin` grants.
    pub fn full_authority() -> Vec<Self> {
        let all = || vec!["*".to_string()];
        vec![
            PolicyRule {
                api_groups: all(),
                resources: all(),
                verbs: all(),
                ..Default::default()
            },
            PolicyRule {
                non_resource_urls: all(),
                verbs: all(),
                ..Default::default()
            },
        ]
    }

    /// The rule split into rules of one group, resource, verb and name each (or one URL
    /// and verb), as kube's `BreakdownRule`.
    fn breakdown(&self) -> Vec<PolicyRule> {
        let mut atoms = Vec::new();
        let one = |s: &String| vec![s.clone()];
        for group in &self.api_groups {
            for resource in &self.resources {
                for verb in &self.verbs {
                    let atom = PolicyRule {
                        api_groups: one(group),
                        resources: one(resource),
                        verbs: one(verb),
                        ..Default::default()
                    };
                    if self.resource_names.is_empty() {
                        atoms.push(atom);
                        continue;
                    }
                    for name in &self.resource_names {
                        atoms.push(PolicyRule {
                            resource_names: one(name),
                            ..atom.clone()
                        });
                    }
                }
            }
        }
        for url in &self.non_resource_urls {
            for verb in &self.verbs {
                atoms.push(PolicyRule {
                    non_resource_urls: one(url),
                    verbs: one(verb),
                    ..Default::default()
                });
            }
        }
        atoms
    }

    /// Whether this rule covers `atom` (a rule of [`breakdown`](Self::breakdown)), as
    /// kube's `ruleCovers`.
    fn covers(&self, atom: &PolicyRule) -> bool {
        let names = if atom.resource_names.is_empty() {
            self.resource_names.is_empty()
        } else {
            self.resource_names.is_empty() || has_all(&self.resource_names, &atom.resource_names)
        };
        (has(&self.verbs, "*") || has_all(&self.verbs, &atom.verbs))
            && (has(&self.api_groups, "*") || has_all(&self.api_groups, &atom.api_groups))
            && resources_cover(&self.resources, &atom.resources)
            && atom
                .non_resource_urls
                .iter()
                .all(|url| self.non_resource_urls.iter().any(|o| url_covers(o, url)))
            && names
    }

    /// The group and resource of a rule with nothing but one group, one resource and
    /// verbs, which [`compact`] merges.
    fn simple_resource(&self) -> Option<(&str, &str)> {
        let simple = self.resource_names.is_empty()
            && self.non_resource_urls.is_empty()
            && self.api_groups.len() == 1
            && self.resources.len() == 1;
        simple.then(|| (self.api_groups[0].as_str(), self.resources[0].as_str()))
    }

    /// kube's `CompactString`: the rule's non-empty fields as Go's `%q` prints lists.
    pub fn compact_string(&self) -> String {
        let fields = [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ];
        let parts: Vec<String> = fields
            .iter()
            .filter(|(_, values)| !values.is_empty())
            .map(|(name, values)| format!("{name}:{}", go_quoted_list(values)))
            .collect();
        format!("{{{}}}", parts.join(", "))
    }
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub fn go_quoted_list(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

fn has(set: &[String], wanted: &str) -> bool {
    set.iter().any(|s| s == wanted)
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| has(set, w))
}

/// kube's `resourceCoversAll`: `*`, the resource itself, or `*/subresource`.
fn resources_cover(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, "*") {
        return true;
    }
    wanted.iter().all(|path| {
        has(owner, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
    })
}

/// kube's `nonResourceURLCovers`: the same URL, or a prefix ending in `*`.
fn url_covers(owner: &str, url: &str) -> bool {
    owner == url
        || owner
            .strip_suffix('*')
            .is_some_and(|_| url.starts_with(owner.trim_end_matches('*')))
}

/// The parts of `servant` that no rule of `owner` covers, as kube's `Covers` lists them
/// (one rule per group, resource, verb and name); empty when `owner` covers everything.
pub fn uncovered(owner: &[PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    servant
        .iter()
        .flat_map(PolicyRule::breakdown)
        .filter(|atom| !owner.iter().any(|rule| rule.covers(atom)))
        .collect()
}

/// kube's `CompactRules`: rules of one group and resource and nothing else but verbs are
/// merged into one rule with all their verbs.
pub fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut compacted: Vec<PolicyRule> = Vec::new();
    let mut merged: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let Some(key) = rule.simple_resource() else {
            compacted.push(rule);
            continue;
        };
        match merged.iter_mut().find(|m| m.simple_resource() == Some(key)) {
            Some(existing) => existing.verbs.extend(rule.verbs),
            None => merged.push(rule),
        }
    }
    compacted.extend(merged);
    compacted
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules(value: Value) -> Vec<PolicyRule> {
        PolicyRule::list(&value)
    }

    fn missing(owner: Value, servant: Value) -> Vec<String> {
        let mut lines: Vec<String> = compact(uncovered(&rules(owner), &rules(servant)))
            .iter()
            .map(PolicyRule::compact_string)
            .collect();
        lines.sort();
        lines
    }

    #[test]
    fn covering_follows_kube_s_rule_covers() {
        let pods = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]);
        assert!(missing(pods.clone(), pods.clone()).is_empty());
        assert!(
            missing(
                json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
                pods.clone()
            )
            .is_empty()
        );
        assert_eq!(
            missing(
                json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
                pods
            ),
            [r#"{APIGroups:[""], Resources:["pods"], Verbs:["list"]}"#]
        );
        // `*/status` covers every status subresource, not the main resource.
        let status =
            json!([{"apiGroups": ["apps"], "resources": ["*/status"], "verbs": ["update"]}]);
        assert!(missing(status.clone(), json!([{"apiGroups": ["apps"], "resources": ["deployments/status"], "verbs": ["update"]}])).is_empty());
        assert_eq!(
            missing(
                status,
                json!([{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["update"]}])
            )
            .len(),
            1
        );
        // A rule limited to names does not cover one for every name, but covers its names.
        let named = json!([{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"], "verbs": ["get"]}]);
        assert_eq!(
            missing(
                named.clone(),
                json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}])
            ),
            [r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}"#]
        );
        assert_eq!(
            missing(
                named,
                json!([{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a", "b"], "verbs": ["get"]}])
            ),
            [r#"{APIGroups:[""], Resources:["secrets"], ResourceNames:["b"], Verbs:["get"]}"#]
        );
        // A URL prefix ending in `*` covers the URLs under it.
        let urls = json!([{"nonResourceURLs": ["/apis/*"], "verbs": ["get"]}]);
        assert!(
            missing(
                urls.clone(),
                json!([{"nonResourceURLs": ["/apis/apps"], "verbs": ["get"]}])
            )
            .is_empty()
        );
        assert_eq!(
            missing(
                urls,
                json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get", "post"]}])
            ),
            [
                r#"{NonResourceURLs:["/metrics"], Verbs:["get"]}"#,
                r#"{NonResourceURLs:["/metrics"], Verbs:["post"]}"#
            ]
        );
    }
}

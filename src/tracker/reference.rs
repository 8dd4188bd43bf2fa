use std::fmt;

use kube::core::Selector;

use crate::object::{GroupKind, ObjectKey};

/// A version-less reference to watched objects: one by name, or many by label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// The API group, empty for the core group.
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The namespace; `None` for cluster-scoped objects or, with a selector, every namespace.
    pub namespace: Option<String>,
    /// The object's name (exactly one of name and selector is set).
    pub name: Option<String>,
    /// The label selector (exactly one of name and selector is set).
    pub selector: Option<Selector>,
}

/// A reference failed validation; lists every problem, sorted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct InvalidReference {
    /// One line per problem.
    pub problems: Vec<String>,
}

impl fmt::Display for InvalidReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid Reference:\n{}", self.problems.join("\n"))
    }
}

impl Reference {
    /// A reference to one object.
    pub fn named(group_kind: &GroupKind, key: &ObjectKey) -> Self {
        Self {
            group: group_kind.group.clone(),
            kind: group_kind.kind.clone(),
            namespace: key.namespace.clone(),
            name: Some(key.name.clone()),
            selector: None,
        }
    }

    /// A reference to every object whose labels match, in a namespace or (`None`) all.
    pub fn selected(group_kind: &GroupKind, namespace: Option<&str>, selector: Selector) -> Self {
        Self {
            group: group_kind.group.clone(),
            kind: group_kind.kind.clone(),
            namespace: namespace.map(str::to_string),
            name: None,
            selector: Some(selector),
        }
    }

    /// The referenced group and kind.
    pub fn group_kind(&self) -> GroupKind {
        GroupKind::new(&self.group, &self.kind)
    }

    /// Checks the kind, group, namespace and name, and that exactly one of name and selector is set.
    pub fn validate(&self) -> Result<(), InvalidReference> {
        let mut problems = Vec::new();
        if !is_c_identifier(&self.kind) {
            problems.push(format!("kind {:?} must be a C identifier", self.kind));
        }
        if !self.group.is_empty() && !is_dns1123_subdomain(&self.group) {
            problems.push(format!(
                "group {:?} must be a DNS-1123 subdomain",
                self.group
            ));
        }
        if let Some(ns) = &self.namespace
            && !is_dns1123_label(ns)
        {
            problems.push(format!("namespace {ns:?} must be a DNS-1123 label"));
        }
        match (&self.name, &self.selector) {
            (Some(_), Some(_)) => problems.push("cannot provide both name and selector".into()),
            (None, None) => problems.push("must provide either name or selector".into()),
            (Some(name), None) if !is_dns1123_subdomain(name) => {
                problems.push(format!("name {name:?} must be a DNS-1123 subdomain"));
            }
            _ => {}
        }
        problems.sort();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(InvalidReference { problems })
        }
    }
}

fn is_c_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_dns1123_label(s: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    s.len() <= 63
        && edge(s.chars().next())
        && edge(s.chars().last())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gk() -> GroupKind {
        GroupKind::new("apps", "Deployment")
    }

    #[test]
    fn valid_references() {
        assert!(
            Reference::named(&gk(), &ObjectKey::namespaced("ns", "web.v1"))
                .validate()
                .is_ok()
        );
        assert!(
            Reference::selected(&GroupKind::new("", "ConfigMap"), None, Selector::default())
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn lists_every_problem_sorted() {
        let mut reference = Reference::named(
            &GroupKind::new("Bad_Group", "not-a-kind"),
            &ObjectKey::namespaced("NS", "x"),
        );
        reference.selector = Some(Selector::default());
        let err = reference.validate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid Reference:\n\
             cannot provide both name and selector\n\
             group \"Bad_Group\" must be a DNS-1123 subdomain\n\
             kind \"not-a-kind\" must be a C identifier\n\
             namespace \"NS\" must be a DNS-1123 label"
        );
        reference.name = None;
        reference.selector = None;
        let err = Reference {
            namespace: None,
            ..reference
        }
        .validate()
        .unwrap_err();
        assert!(
            err.problems
                .contains(&"must provide either name or selector".to_string())
        );
        let bad_name = Reference::named(&gk(), &ObjectKey::cluster("Web"));
        assert_eq!(
            bad_name.validate().unwrap_err().problems,
            ["name \"Web\" must be a DNS-1123 subdomain"]
        );
    }
}

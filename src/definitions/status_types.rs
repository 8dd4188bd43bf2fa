//! The schema of a status template's fields inferred from their expressions' types, as
//! KRO generates an RGD's instance status schema: a field that is one `${...}` takes its
//! type ([`Ty::openapi`]), text with expressions is a string, a map an object of its
//! fields.

use serde_json::{Map, Value, json};

use super::check::{Findings, Scope, check};
use super::expr::{Template, Text};

/// The `properties` of the status `template` builds, its expressions typed in `scope`;
/// `None` when it is not a map of fields.
pub fn inferred_properties(template: &Template, scope: &Scope) -> Option<Map<String, Value>> {
    let Template::Map(fields) = template else {
        return None;
    };
    Some(
        fields
            .iter()
            .map(|(name, value)| (name.clone(), inferred(value, scope)))
            .collect(),
    )
}

fn inferred(template: &Template, scope: &Scope) -> Value {
    match template {
        Template::Text(Text::Whole(expression)) => {
            // Errors were reported when the step was checked: here only the type counts.
            check(expression, scope, &mut Findings::default()).map_or_else(
                |_| json!({"x-kubernetes-preserve-unknown-fields": true}),
                |ty| ty.openapi(),
            )
        }
        Template::Text(_) => json!({"type": "string"}),
        Template::Map(_) => json!({"type": "object",
            "properties": inferred_properties(template, scope).unwrap_or_default()}),
        Template::List(_) | Template::Plain(_) => {
            json!({"x-kubernetes-preserve-unknown-fields": true})
        }
    }
}

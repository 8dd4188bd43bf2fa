//! A resource's `forEach` as one list of items, as KRO expands it: each dimension a map
//! of one iterator name to a list expression, several dimensions their cartesian product
//! (the first the outer loop), no item when any list is empty. With one dimension the
//! item is the iterator (`each`); with several it is a map of the iterators, each read as
//! `each.<name>`. Iterator names are checked as KRO's builder checks them.

use std::collections::BTreeMap;

use kube::api::DynamicObject;

use super::expressions::{Renames, expressions, rename, rename_in_text, variables};
use crate::definitions::DefinitionError;

/// The label holding a collection item's position in its `forEach` (`"0"`, `"1"`, ...).
pub const COLLECTION_INDEX_LABEL: &str = "kro.run/collection-index";
/// The label holding the number of items of a collection.
pub const COLLECTION_SIZE_LABEL: &str = "kro.run/collection-size";

/// KRO's default limit of dimensions (`--rgd-max-collection-dimension-size`).
const MAX_DIMENSIONS: usize = 10;

/// Names an iterator may not take besides CEL's reserved words
/// ([`dynrec_k8s_cel::RESERVED_WORDS`]): KRO's reserved words and the names dynrec binds.
const RESERVED: &[&str] = &[
    "apiVersion",
    "context",
    "dependency",
    "dependencies",
    "each",
    "externalRef",
    "externalReference",
    "externalRefs",
    "externalReferences",
    "graph",
    "instance",
    "item",
    "items",
    "kind",
    "kro",
    "metadata",
    "namespace",
    "object",
    "resource",
    "resourcegraphdefinition",
    "resourceGraphDefinition",
    "resources",
    "root",
    "runtime",
    "schema",
    "self",
    "serviceAccountName",
    "spec",
    "status",
    "this",
    "variables",
    "vars",
    "version",
    "child",
    "now",
];

/// A collection as one list: its expression and what each iterator is renamed to.
pub(super) struct Collection {
    /// `${...}` giving the items.
    pub for_each: String,
    /// The iterators and what they read in templates (`each` or `each.<name>`).
    pub iterators: Renames,
}

/// The collection of the resource `id` at `at`, its expressions renamed by `base`;
/// `ids` are the graph's resource ids (no iterator may take one).
pub(super) fn collection(
    dimensions: &[BTreeMap<String, String>],
    id: &str,
    ids: &[&str],
    base: &Renames,
    at: &str,
) -> Result<Collection, DefinitionError> {
    if dimensions.len() > MAX_DIMENSIONS {
        return Err(DefinitionError::new(
            format!("{at}.forEach"),
            format!(
                "resource {id:?}: forEach cannot have more than {MAX_DIMENSIONS} dimensions, got {}",
                dimensions.len()
            ),
        ));
    }
    let mut named: Vec<(&str, &str)> = Vec::new();
    for (i, dimension) in dimensions.iter().enumerate() {
        let here = format!("{at}.forEach[{i}]");
        let Some((name, list)) = dimension.iter().next().filter(|_| dimension.len() == 1) else {
            return Err(DefinitionError::new(
                here,
                "a forEach dimension is a map of one iterator name to a list expression",
            ));
        };
        iterator_name(name, id, ids, named.iter().map(|(n, _)| *n))
            .map_err(|message| DefinitionError::new(format!("{here}.{name}"), message))?;
        named.push((name, list));
    }
    let names: Vec<&str> = named.iter().map(|(n, _)| *n).collect();
    let mut lists = Vec::new();
    for (i, (name, list)) in named.iter().enumerate() {
        let here = format!("{at}.forEach[{i}].{name}");
        let inside = match expressions(list).as_slice() {
            [(2, end)] if *end == list.len() - 1 => &list[2..*end],
            _ => {
                return Err(DefinitionError::new(
                    here,
                    format!(
                        "forEach dimension {name:?} must have exactly one expression (${{...}})"
                    ),
                ));
            }
        };
        let crossed: Vec<String> = variables(inside)
            .into_iter()
            .filter(|v| names.contains(&v.as_str()))
            .collect();
        if !crossed.is_empty() {
            return Err(DefinitionError::new(
                here,
                format!(
                    "forEach iterator {name:?} cannot reference other iterators {crossed:?}: forEach iterators are independent (cartesian product); for a list that depends on another, build it in one expression with .map(...).flatten()"
                ),
            ));
        }
        lists.push(rename(inside, base));
    }
    if let [(name, list)] = named.as_slice() {
        return Ok(Collection {
            for_each: rename_in_text(list, base),
            iterators: Renames::from([((*name).to_owned(), "each".to_owned())]),
        });
    }
    Ok(Collection {
        for_each: format!("${{{}}}", product(&names, &lists)),
        iterators: names
            .iter()
            .map(|n| ((*n).to_owned(), format!("each.{n}")))
            .collect(),
    })
}

/// Why `name` cannot be an iterator of resource `id`, if it cannot (KRO's messages).
fn iterator_name<'a>(
    name: &str,
    id: &str,
    ids: &[&str],
    mut earlier: impl Iterator<Item = &'a str>,
) -> Result<(), String> {
    let mut chars = name.chars();
    let camel = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_alphanumeric());
    if !camel {
        return Err(format!(
            "resource {id:?}: forEach iterator name {name:?} is not valid: must be lowerCamelCase"
        ));
    }
    if RESERVED.contains(&name) || dynrec_k8s_cel::RESERVED_WORDS.contains(&name) {
        return Err(format!(
            "resource {id:?}: forEach iterator name {name:?} is a reserved keyword"
        ));
    }
    if ids.contains(&name) {
        return Err(format!(
            "resource {id:?}: forEach iterator name {name:?} conflicts with resource ID"
        ));
    }
    if earlier.any(|e| e == name) {
        return Err(format!(
            "resource {id:?}: duplicate forEach iterator name {name:?}"
        ));
    }
    Ok(())
}

/// The CEL expression of the cartesian product of `lists` (one per name, the first the
/// outer loop): a list of maps from each name to its value.
fn product(names: &[&str], lists: &[String]) -> String {
    let fields: Vec<String> = names.iter().map(|n| format!("'{n}': {n}")).collect();
    let mut inner = format!("{{{}}}", fields.join(", "));
    for (i, (name, list)) in names.iter().zip(lists).enumerate().rev() {
        let flatten = if i + 1 < names.len() {
            ".flatten()"
        } else {
            ""
        };
        inner = format!("({list}).map({name}, {inner}){flatten}");
    }
    inner
}

/// Whether the template's identity (`metadata.name`, `metadata.namespace`) reads every
/// iterator, as KRO requires; else the error naming those missing.
pub(super) fn check_identity(
    identity: &[&str],
    iterators: &Renames,
    id: &str,
    at: &str,
) -> Result<(), DefinitionError> {
    let read: Vec<String> = identity
        .iter()
        .flat_map(|text| {
            expressions(text)
                .into_iter()
                .flat_map(|(start, end)| variables(&text[start..end]))
        })
        .collect();
    let missing: Vec<&String> = iterators.keys().filter(|n| !read.contains(n)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(DefinitionError::new(
        format!("{at}.template.metadata.name"),
        format!(
            "resource {id:?}: all forEach dimensions must be used to produce a unique resource identity (metadata.name or metadata.namespace), missing: {missing:?}"
        ),
    ))
}

/// Labels a collection's item as KRO does: its position in the `forEach` and the
/// collection's size (`pkg/controller/instance/resources.go`, `applyDecoratorMetadata`),
/// over any the template sets.
pub fn label_collection_item(child: &mut DynamicObject, index: usize, size: usize) {
    let labels = child.metadata.labels.get_or_insert_with(Default::default);
    labels.insert(COLLECTION_INDEX_LABEL.to_owned(), index.to_string());
    labels.insert(COLLECTION_SIZE_LABEL.to_owned(), size.to_string());
}

#[cfg(test)]
mod tests {
    use super::super::translate::{parse_rgd, translate};
    use super::*;

    /// The first error of an RGD whose `configs` resource has these `forEach` and name.
    fn refusal(for_each: &str, name: &str) -> String {
        let rgd = format!(
            "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {{name: r}}\nspec:\n  schema: {{apiVersion: v1alpha1, kind: R, spec: {{a: '[]string', b: '[]string'}}}}\n  resources:\n  - id: configs\n    forEach: {for_each}\n    template: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: '{name}'}}}}\n"
        );
        let rgd = parse_rgd(serde_saphyr::from_str(&rgd).unwrap()).unwrap();
        match translate(&rgd) {
            Ok(_) => panic!("{for_each} with name {name} was accepted"),
            Err(errors) => errors.0[0].to_string(),
        }
    }

    #[test]
    fn iterators_are_refused_as_kro_refuses_them() {
        let both = "[{x: '${schema.spec.a}'}, {y: '${schema.spec.b}'}]";
        assert_eq!(
            refusal(both, "${x}"),
            r#"spec.resources[0] (id configs).template.metadata.name: resource "configs": all forEach dimensions must be used to produce a unique resource identity (metadata.name or metadata.namespace), missing: ["y"]"#
        );
        assert!(
            refusal("[{x: '${schema.spec.a}'}, {y: '${x}'}]", "${x}-${y}")
                .starts_with(r#"spec.resources[0] (id configs).forEach[1].y: forEach iterator "y" cannot reference other iterators ["x"]"#)
        );
        assert!(
            refusal("[{x: '${schema.spec.a}'}, {x: '${schema.spec.b}'}]", "${x}")
                .ends_with(r#"duplicate forEach iterator name "x""#)
        );
        assert!(
            refusal("[{item: '${schema.spec.a}'}]", "${item}")
                .ends_with(r#"forEach iterator name "item" is a reserved keyword"#)
        );
        assert!(
            refusal("[{configs: '${schema.spec.a}'}]", "${configs}")
                .ends_with(r#"forEach iterator name "configs" conflicts with resource ID"#)
        );
        assert!(
            refusal("[{Bad_name: '${schema.spec.a}'}]", "${Bad_name}")
                .ends_with("must be lowerCamelCase")
        );
        assert!(
            refusal("[{x: 'a-${schema.spec.a}'}]", "${x}")
                .ends_with("must have exactly one expression (${...})")
        );
    }

    #[test]
    fn several_dimensions_are_their_cartesian_product_first_outermost() {
        assert_eq!(
            product(&["region", "tier"], &["a".into(), "b".into()]),
            "(a).map(region, (b).map(tier, {'region': region, 'tier': tier})).flatten()"
        );
        assert_eq!(
            product(&["x", "y", "z"], &["a".into(), "b".into(), "c".into()]),
            "(a).map(x, (b).map(y, (c).map(z, {'x': x, 'y': y, 'z': z})).flatten()).flatten()"
        );
    }
}

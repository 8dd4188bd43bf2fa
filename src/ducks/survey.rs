//! One look at the cluster: what it serves (CRDs, built-in kinds' OpenAPI schemas, the
//! kinds known to be built in) and the `DuckMapping`s, and which kinds implement each duck.

use std::collections::HashSet;
use std::fmt;

use kube::api::DynamicObject;
use serde_json::Value;

use super::openapi::{self, OpenApiKinds};
use super::{
    DuckMapping, DuckType, KindMatch, Miss, Verdict, match_builtins, match_crd, match_mapping,
    match_openapi,
};
use crate::client::{Client, served_kinds};
use crate::object::Gvk;

/// A kind's schema and the named schemas its `$ref`s point to, when known.
type KnownSchema<'a> = Option<(&'a Value, &'a Value)>;

/// What the matcher reads.
#[derive(Clone, Debug, Default)]
pub(crate) struct Catalog {
    /// The cluster's CRDs.
    pub crds: Vec<DynamicObject>,
    /// The schemas of the kinds served without a CRD.
    pub openapi: OpenApiKinds,
    /// The ducks' known built-in kinds, and the kinds of dynrec's own mappings, that are
    /// served but whose OpenAPI document is not.
    pub fallback: HashSet<Gvk>,
    /// The cluster's valid `DuckMapping`s.
    pub mappings: Vec<DuckMapping>,
}

/// The kinds matching each duck, and the near-misses, found in one look at the cluster.
#[derive(Clone, Debug, Default)]
pub struct Survey {
    /// The matches, at most one version per duck and kind, by duck, group and kind.
    pub matches: Vec<KindMatch>,
    /// Kinds that got as far as the duck's path, or that a mapping maps, and why they miss.
    pub near_misses: Vec<NearMiss>,
}

/// A kind that does not implement a duck though it came close, or though a mapping says so.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NearMiss {
    /// The duck's name.
    pub duck: String,
    /// The kind.
    pub gvk: Gvk,
    /// The `DuckMapping` that maps the kind, if one does.
    pub mapping: Option<String>,
    /// Why it misses.
    pub miss: Miss,
}

impl fmt::Display for NearMiss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: ", self.duck, self.gvk)?;
        if let Some(mapping) = &self.mapping {
            write!(f, "DuckMapping {mapping}: ")?;
        }
        write!(f, "{}", self.miss)
    }
}

impl Catalog {
    /// Reads the OpenAPI schemas of the kinds served without a CRD, and which of the
    /// ducks' known built-ins (and the kinds dynrec's own mappings map) are served without
    /// one.
    pub async fn read_builtins(&mut self, client: &Client, ducks: &[DuckType]) {
        let crd_group_versions: HashSet<String> = self
            .crds
            .iter()
            .flat_map(served_kinds)
            .map(|r| r.gvk.api_version())
            .collect();
        self.openapi = openapi::fetch(client.kube(), &crd_group_versions).await;
        self.fallback.clear();
        let mapped = DuckMapping::builtin().into_iter().flat_map(|m| {
            let versions = m.versions.clone();
            versions
                .into_iter()
                .map(move |v| Gvk::new(&m.group, &v, &m.kind))
        });
        let known = ducks.iter().flat_map(DuckType::builtins).cloned();
        for gvk in known.chain(mapped) {
            if !self.openapi.read.contains(&gvk.api_version()) && client.resolve(&gvk).await.is_ok()
            {
                self.fallback.insert(gvk);
            }
        }
    }

    /// Every served kind with its schema and the schema's `$ref` targets, when known.
    fn served(&self) -> Vec<(Gvk, KnownSchema<'_>)> {
        let from_crds = self.crds.iter().flat_map(|crd| {
            let versions = crd.data["spec"]["versions"].as_array();
            let mut kinds: Vec<(Gvk, KnownSchema<'_>, bool)> = served_kinds(crd)
                .into_iter()
                .map(|r| {
                    let version = versions
                        .into_iter()
                        .flatten()
                        .find(|v| v["name"].as_str() == Some(r.gvk.version.as_str()));
                    let schema = version.map(|v| (&v["schema"]["openAPIV3Schema"], &Value::Null));
                    let storage = version.is_some_and(|v| v["storage"] == true);
                    (r.gvk, schema, storage)
                })
                .collect();
            kinds.sort_by_key(|(_, _, storage)| !storage);
            kinds.into_iter().map(|(gvk, schema, _)| (gvk, schema))
        });
        let from_openapi = self
            .openapi
            .kinds
            .iter()
            .map(|k| (k.gvk.clone(), Some((k.node(), &*k.defs))));
        let fallback = self.fallback.iter().map(|gvk| (gvk.clone(), None));
        from_crds.chain(from_openapi).chain(fallback).collect()
    }

    /// The mappings of `duck`: the cluster's, then dynrec's own for kinds the cluster's
    /// do not map.
    fn mappings_of(&self, duck: &DuckType) -> Vec<DuckMapping> {
        let mut mappings: Vec<DuckMapping> = self
            .mappings
            .iter()
            .filter(|m| m.duck == duck.name())
            .cloned()
            .collect();
        let shipped: Vec<DuckMapping> = DuckMapping::builtin()
            .into_iter()
            .filter(|b| {
                b.duck == duck.name()
                    && !mappings
                        .iter()
                        .any(|m| m.group == b.group && m.kind == b.kind)
            })
            .collect();
        mappings.extend(shipped);
        mappings
    }

    /// Which kinds implement each duck, and the near-misses.
    pub fn survey(&self, ducks: &[DuckType]) -> Survey {
        let served = self.served();
        // A CRD created while the OpenAPI documents were read is matched as a CRD.
        let by_crd: HashSet<Gvk> = self
            .crds
            .iter()
            .flat_map(served_kinds)
            .map(|r| r.gvk)
            .collect();
        let mut survey = Survey::default();
        for duck in ducks {
            let mut claimed: HashSet<(String, String)> = HashSet::new();
            // The first verdict on a kind wins; a mapping's is reported even when the path
            // is missing altogether.
            let mut found =
                |gvk: &Gvk, verdict: Verdict, mapping: Option<&str>, survey: &mut Survey| {
                    if !claimed.insert((gvk.group.clone(), gvk.kind.clone())) {
                        return;
                    }
                    match verdict {
                        Verdict::Match(reason) => {
                            survey
                                .matches
                                .push(KindMatch::new(duck, gvk.clone(), reason));
                        }
                        Verdict::Miss(miss) if mapping.is_some() || miss.is_near() => {
                            survey.near_misses.push(NearMiss {
                                duck: duck.name().to_string(),
                                gvk: gvk.clone(),
                                mapping: mapping.map(str::to_string),
                                miss,
                            });
                        }
                        Verdict::Miss(_) => {
                            claimed.remove(&(gvk.group.clone(), gvk.kind.clone()));
                        }
                    }
                };
            // A mapping claims its kind (first served version it covers), right or wrong.
            for mapping in self.mappings_of(duck) {
                if let Some((gvk, schema)) = served.iter().find(|(gvk, _)| mapping.covers(gvk)) {
                    found(
                        gvk,
                        match_mapping(duck, &mapping, *schema),
                        Some(&mapping.name),
                        &mut survey,
                    );
                }
            }
            for kind in self
                .openapi
                .kinds
                .iter()
                .filter(|k| !by_crd.contains(&k.gvk))
            {
                let verdict = match_openapi(duck, &kind.defs, kind.node());
                found(&kind.gvk, verdict, None, &mut survey);
            }
            for matched in match_builtins(duck, |gvk| self.fallback.contains(gvk)) {
                found(
                    &matched.gvk,
                    Verdict::Match(matched.reason),
                    None,
                    &mut survey,
                );
            }
            for crd in &self.crds {
                if let Some((gvk, verdict)) = match_crd(duck, crd) {
                    found(&gvk, verdict, None, &mut survey);
                }
            }
        }
        // By duck (in the order given), then by group and kind, as `kubectl api-resources`.
        let position = |m: &KindMatch| ducks.iter().position(|d| d.name() == m.duck);
        survey
            .matches
            .sort_by_key(|m| (position(m), m.gvk.group.clone(), m.gvk.kind.clone()));
        survey
    }
}

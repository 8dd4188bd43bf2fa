//! Query parameters of Kubernetes requests.

use std::collections::HashMap;

use crate::error::{ApiError, ApiResult};

/// The decoded query string of a request.
#[derive(Clone, Debug, Default)]
pub struct Query(HashMap<String, String>);

impl Query {
    /// Decodes `a=b&c=d` (percent- and plus-decoding values).
    pub fn parse(raw: Option<&str>) -> Self {
        let pairs = form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        Query(pairs)
    }

    /// A parameter's value, if given and not empty.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// A boolean parameter (`true`/`1` is true; absent is false).
    pub fn flag(&self, key: &str) -> ApiResult<bool> {
        match self.get(key) {
            None | Some("false") | Some("0") => Ok(false),
            Some("true") | Some("1") => Ok(true),
            Some(other) => Err(ApiError::bad_request(format!(
                "invalid value for query parameter {key}: {other:?} (expected true or false)"
            ))),
        }
    }

    /// A non-negative integer parameter.
    pub fn number(&self, key: &str) -> ApiResult<Option<u64>> {
        self.get(key)
            .map(|v| {
                v.parse::<u64>().map_err(|_| {
                    ApiError::bad_request(format!(
                        "invalid value for query parameter {key}: {v:?} (expected a non-negative integer)"
                    ))
                })
            })
            .transpose()
    }

    /// Whether `dryRun=All` was given; any other dryRun value is refused.
    pub fn dry_run(&self) -> ApiResult<bool> {
        match self.get("dryRun") {
            None => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(ApiError::bad_request(format!(
                "invalid dryRun value {other:?}: the only accepted value is \"All\""
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_selectors_and_flags() {
        let q = Query::parse(Some(
            "labelSelector=app%3Dweb%2Ctier+in+(a)&watch=true&limit=5",
        ));
        assert_eq!(q.get("labelSelector"), Some("app=web,tier in (a)"));
        assert!(q.flag("watch").unwrap());
        assert_eq!(q.number("limit").unwrap(), Some(5));
        assert!(q.flag("missing").is_ok_and(|v| !v));
        assert_eq!(
            Query::parse(Some("limit=x"))
                .number("limit")
                .unwrap_err()
                .code,
            400
        );
        assert_eq!(
            Query::parse(Some("dryRun=Some"))
                .dry_run()
                .unwrap_err()
                .code,
            400
        );
    }
}

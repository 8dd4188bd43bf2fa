//! Conversion of decoded k8s-pb messages into their k8s-openapi counterparts, whose JSON is
//! what a JSON request would carry.
//!
//! Protobuf bodies mark every non-pointer Go field as present, so a field that is present
//! with its zero value (`""`, `false`, `0`) is read as unset when the k8s-openapi field is
//! optional, as Go's `omitempty` leaves it out of JSON. Fields Go declares as pointers are
//! sent only when set (Kubernetes' messages are proto2, with field presence): they are
//! marked `: ptr` in the message lists and keep a present zero.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, MicroTime, Time};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use k8s_pb::apimachinery::pkg::{api::resource as pb_resource, apis::meta::v1 as pb_meta};
use k8s_pb::apimachinery::pkg::{runtime as pb_runtime, util::intstr as pb_intstr};
use prost::Message;
use serde::Serialize;
use serde_json::Value;

/// Why a protobuf message could not be converted.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The wire format is broken.
    #[error(transparent)]
    Wire(#[from] prost::DecodeError),
    /// A timestamp is out of range.
    #[error("invalid timestamp: {0}")]
    Time(String),
    /// An embedded JSON value is not JSON.
    #[error("embedded JSON is not valid: {0}")]
    Json(#[from] serde_json::Error),
    /// A field this server does not know is set.
    #[error("field {0} is not supported by this server")]
    Unsupported(&'static str),
}

/// Decodes one kind's message and renders it as the JSON of its k8s-openapi type.
pub fn object<P, O>(raw: &[u8]) -> Result<Value, DecodeError>
where
    P: Message + Default,
    O: FromPb<Option<P>> + Serialize,
{
    let object = O::from_pb(Some(P::decode(raw)?))?;
    Ok(serde_json::to_value(&object)?)
}

/// Builds `Self` from a decoded protobuf value (`Option` for a message or scalar field).
pub trait FromPb<P>: Sized {
    /// Converts one field's value.
    fn from_pb(value: P) -> Result<Self, DecodeError>;
}

/// Required scalars take the zero value when absent; optional ones drop the zero value.
macro_rules! scalars {
    ($($scalar:ty),*) => {$(
        impl FromPb<Option<$scalar>> for $scalar {
            fn from_pb(value: Option<$scalar>) -> Result<Self, DecodeError> {
                Ok(value.unwrap_or_default())
            }
        }
        impl FromPb<Option<$scalar>> for Option<$scalar> {
            fn from_pb(value: Option<$scalar>) -> Result<Self, DecodeError> {
                Ok(value.filter(|v| *v != <$scalar>::default()))
            }
        }
    )*};
}

scalars!(String, bool, i32, i64, f64);

impl<P, O: FromPb<Option<P>>> FromPb<Vec<P>> for Vec<O> {
    fn from_pb(value: Vec<P>) -> Result<Self, DecodeError> {
        value.into_iter().map(|v| O::from_pb(Some(v))).collect()
    }
}

impl<P, O: FromPb<Option<P>>> FromPb<Vec<P>> for Option<Vec<O>> {
    fn from_pb(value: Vec<P>) -> Result<Self, DecodeError> {
        Ok(Some(Vec::from_pb(value)?).filter(|v| !v.is_empty()))
    }
}

impl<P, O: FromPb<Option<P>>> FromPb<BTreeMap<String, P>> for BTreeMap<String, O> {
    fn from_pb(value: BTreeMap<String, P>) -> Result<Self, DecodeError> {
        value
            .into_iter()
            .map(|(k, v)| Ok((k, O::from_pb(Some(v))?)))
            .collect()
    }
}

impl<P, O: FromPb<Option<P>>> FromPb<BTreeMap<String, P>> for Option<BTreeMap<String, O>> {
    fn from_pb(value: BTreeMap<String, P>) -> Result<Self, DecodeError> {
        Ok(Some(BTreeMap::from_pb(value)?).filter(|m| !m.is_empty()))
    }
}

/// Implements the `Option` form of a conversion from its plain form.
macro_rules! optional {
    ($($pb:ty => $oa:ty),* $(,)?) => {$(
        impl $crate::http::protobuf::convert::FromPb<Option<$pb>> for Option<$oa> {
            fn from_pb(
                value: Option<$pb>,
            ) -> Result<Self, $crate::http::protobuf::convert::DecodeError> {
                value
                    .map(|v| $crate::http::protobuf::convert::FromPb::from_pb(Some(v)))
                    .transpose()
            }
        }
    )*};
}
pub(super) use optional;

impl FromPb<Option<Vec<u8>>> for ByteString {
    fn from_pb(value: Option<Vec<u8>>) -> Result<Self, DecodeError> {
        Ok(ByteString(value.unwrap_or_default()))
    }
}

impl FromPb<Option<pb_resource::Quantity>> for Quantity {
    fn from_pb(value: Option<pb_resource::Quantity>) -> Result<Self, DecodeError> {
        Ok(Quantity(value.and_then(|q| q.string).unwrap_or_default()))
    }
}

impl FromPb<Option<pb_intstr::IntOrString>> for IntOrString {
    fn from_pb(value: Option<pb_intstr::IntOrString>) -> Result<Self, DecodeError> {
        let value = value.unwrap_or_default();
        Ok(match value.r#type {
            Some(1) => IntOrString::String(value.str_val.unwrap_or_default()),
            _ => IntOrString::Int(value.int_val.unwrap_or_default()),
        })
    }
}

/// A time from seconds and nanoseconds since the epoch; a zero time is unset.
fn timestamp(value: Option<(Option<i64>, Option<i32>)>) -> Result<Timestamp, DecodeError> {
    let (seconds, nanos) = value.unwrap_or_default();
    Timestamp::new(seconds.unwrap_or_default(), nanos.unwrap_or_default())
        .map_err(|e| DecodeError::Time(e.to_string()))
}

impl FromPb<Option<pb_meta::Time>> for Time {
    fn from_pb(value: Option<pb_meta::Time>) -> Result<Self, DecodeError> {
        timestamp(value.map(|t| (t.seconds, t.nanos))).map(Time)
    }
}

impl FromPb<Option<pb_meta::MicroTime>> for MicroTime {
    fn from_pb(value: Option<pb_meta::MicroTime>) -> Result<Self, DecodeError> {
        timestamp(value.map(|t| (t.seconds, t.nanos))).map(MicroTime)
    }
}

/// An embedded JSON document (`null` when empty).
fn embedded_json(raw: Option<Vec<u8>>) -> Result<serde_json::Value, DecodeError> {
    match raw.filter(|r| !r.is_empty()) {
        None => Ok(serde_json::Value::Null),
        Some(raw) => Ok(serde_json::from_slice(&raw)?),
    }
}

impl FromPb<Option<pb_runtime::RawExtension>> for RawExtension {
    fn from_pb(value: Option<pb_runtime::RawExtension>) -> Result<Self, DecodeError> {
        embedded_json(value.and_then(|r| r.raw)).map(RawExtension)
    }
}

impl FromPb<Option<pb_meta::FieldsV1>> for FieldsV1 {
    fn from_pb(value: Option<pb_meta::FieldsV1>) -> Result<Self, DecodeError> {
        embedded_json(value.and_then(|f| f.raw)).map(FieldsV1)
    }
}

optional!(
    Vec<u8> => ByteString,
    pb_resource::Quantity => Quantity,
    pb_intstr::IntOrString => IntOrString,
    pb_runtime::RawExtension => RawExtension,
    pb_meta::FieldsV1 => FieldsV1,
);

/// A zero time (the Go zero value, sent for an unset non-pointer time) is unset.
macro_rules! optional_time {
    ($($pb:ty => $oa:ident),*) => {$(
        impl FromPb<Option<$pb>> for Option<$oa> {
            fn from_pb(value: Option<$pb>) -> Result<Self, DecodeError> {
                match value {
                    Some(t) if t.seconds.is_some_and(|s| s != 0) || t.nanos.is_some_and(|n| n != 0) => {
                        <$oa>::from_pb(Some(t)).map(Some)
                    }
                    _ => Ok(None),
                }
            }
        }
    )*};
}

optional_time!(pb_meta::Time => Time, pb_meta::MicroTime => MicroTime);

/// Refuses a set field that this server's k8s-openapi does not have.
pub fn refuse_set<T>(value: &Option<T>, field: &'static str) -> Result<(), DecodeError> {
    match value {
        Some(_) => Err(DecodeError::Unsupported(field)),
        None => Ok(()),
    }
}

/// A scalar field that Go declares as a pointer: protobuf (proto2, with field presence)
/// sends it only when set, so a present zero (`replicas: 0`) is a zero, not unset.
pub fn pointer<T>(value: Option<T>) -> Result<Option<T>, DecodeError> {
    Ok(value)
}

/// Sets one k8s-openapi field from the k8s-pb field of the same (or the given) name; a
/// field marked `: ptr` is a Go pointer and keeps a present zero.
macro_rules! assign {
    ($out:ident, $pb:ident) => {
        $out.$pb = $crate::http::protobuf::convert::FromPb::from_pb($pb)?;
    };
    ($out:ident, $pb:ident => $oa:ident) => {
        $out.$oa = $crate::http::protobuf::convert::FromPb::from_pb($pb)?;
    };
    ($out:ident, $pb:ident : ptr) => {
        $out.$pb = $crate::http::protobuf::convert::pointer($pb)?;
    };
}
pub(super) use assign;

/// The k8s-openapi type of a k8s-pb message: the same name, or the given one.
macro_rules! oa_type {
    ($module:ident $pb:ident) => {
        k8s_openapi_modules::$module::$pb
    };
    ($module:ident $pb:ident $oa:ident) => {
        k8s_openapi_modules::$module::$oa
    };
}
pub(super) use oa_type;

/// Converts k8s-pb messages field by field into the k8s-openapi struct of the same module.
///
/// `Type { a, b => c, p: ptr } - skipped + inlined: Inner { d }`: `a` goes to `a`, `b` to
/// `c`, `p` (a Go pointer) keeps a present zero; a set `skipped` is refused; `inlined` (a Go embedded struct) has its fields spread into the
/// outer one. Every k8s-pb field must be named, so a new field fails to compile.
macro_rules! messages {
    ($(
        $module:ident $pb:ident $(=> $oa:ident)?
        { $($field:ident $(=> $to:ident)? $(: $mode:ident)?),* $(,)? }
        $(- $skip:ident)*
        $(+ $inline:ident : $inner:ident { $($ifield:ident $(=> $ito:ident)?),* $(,)? })* ;
    )*) => {$(
        impl $crate::http::protobuf::convert::FromPb<Option<k8s_pb_modules::$module::$pb>>
            for $crate::http::protobuf::convert::oa_type!($module $pb $($oa)?)
        {
            #[allow(clippy::field_reassign_with_default)]
            fn from_pb(
                value: Option<k8s_pb_modules::$module::$pb>,
            ) -> Result<Self, $crate::http::protobuf::convert::DecodeError> {
                let k8s_pb_modules::$module::$pb { $($field,)* $($skip,)* $($inline,)* } =
                    value.unwrap_or_default();
                $($crate::http::protobuf::convert::refuse_set(&$skip, stringify!($skip))?;)*
                let mut out = Self::default();
                $($crate::http::protobuf::convert::assign!(out, $field $(=> $to)? $(: $mode)?);)*
                $(
                    let k8s_pb_modules::$module::$inner { $($ifield,)* } = $inline.unwrap_or_default();
                    $($crate::http::protobuf::convert::assign!(out, $ifield $(=> $ito)?);)*
                )*
                Ok(out)
            }
        }
        $crate::http::protobuf::convert::optional!(
            k8s_pb_modules::$module::$pb => $crate::http::protobuf::convert::oa_type!($module $pb $($oa)?)
        );
    )*};
}
pub(super) use messages;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_scalars_drop_zero_values_and_required_ones_keep_them() {
        assert_eq!(Option::<bool>::from_pb(Some(false)).unwrap(), None);
        assert_eq!(Option::<i32>::from_pb(Some(3)).unwrap(), Some(3));
        assert_eq!(String::from_pb(None).unwrap(), "");
        assert_eq!(
            Option::<Vec<String>>::from_pb(Vec::<String>::new()).unwrap(),
            None
        );
    }

    #[test]
    fn times_quantities_and_int_or_strings_read_as_their_json_forms() {
        let time = pb_meta::Time {
            seconds: Some(1_767_225_600),
            nanos: Some(0),
        };
        let converted = Option::<Time>::from_pb(Some(time)).unwrap();
        assert_eq!(
            serde_json::to_value(converted).unwrap(),
            "2026-01-01T00:00:00Z"
        );
        assert_eq!(
            Option::<Time>::from_pb(Some(pb_meta::Time::default())).unwrap(),
            None
        );
        let quantity = pb_resource::Quantity {
            string: Some("500m".into()),
        };
        assert_eq!(Quantity::from_pb(Some(quantity)).unwrap().0, "500m");
        let port = pb_intstr::IntOrString {
            r#type: Some(1),
            int_val: Some(0),
            str_val: Some("http".into()),
        };
        assert_eq!(
            IntOrString::from_pb(Some(port)).unwrap(),
            IntOrString::String("http".into())
        );
        let raw = pb_runtime::RawExtension {
            raw: Some(br#"{"a":1}"#.to_vec()),
        };
        assert_eq!(
            RawExtension::from_pb(Some(raw)).unwrap().0,
            serde_json::json!({"a": 1})
        );
    }
}

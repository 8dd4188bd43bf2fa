//! `metav1` structs every object carries, in Go struct order.

use crate::json_order::Shape;

/// `metav1.OwnerReference`.
static OWNER_REFERENCE: Shape = Shape {
    fields: &[
        ("apiVersion", None),
        ("kind", None),
        ("name", None),
        ("uid", None),
        ("controller", None),
        ("blockOwnerDeletion", None),
    ],
};

/// `metav1.ManagedFieldsEntry`.
static MANAGED_FIELDS_ENTRY: Shape = Shape {
    fields: &[
        ("manager", None),
        ("operation", None),
        ("apiVersion", None),
        ("time", None),
        ("fieldsType", None),
        ("fieldsV1", None),
        ("subresource", None),
    ],
};

/// `metav1.ObjectMeta`.
pub static OBJECT_META: Shape = Shape {
    fields: &[
        ("name", None),
        ("generateName", None),
        ("namespace", None),
        ("selfLink", None),
        ("uid", None),
        ("resourceVersion", None),
        ("generation", None),
        ("creationTimestamp", None),
        ("deletionTimestamp", None),
        ("deletionGracePeriodSeconds", None),
        ("labels", None),
        ("annotations", None),
        ("ownerReferences", Some(&OWNER_REFERENCE)),
        ("finalizers", None),
        ("managedFields", Some(&MANAGED_FIELDS_ENTRY)),
    ],
};

/// `metav1.ListMeta`.
pub static LIST_META: Shape = Shape {
    fields: &[
        ("selfLink", None),
        ("resourceVersion", None),
        ("continue", None),
        ("remainingItemCount", None),
    ],
};

/// `metav1.Condition` and the conditions of most built-in kinds, which share its order
/// (`type`, `status`, then times, `reason`, `message`).
pub static CONDITION: Shape = Shape {
    fields: &[
        ("type", None),
        ("status", None),
        ("observedGeneration", None),
        ("lastProbeTime", None),
        ("lastHeartbeatTime", None),
        ("lastUpdateTime", None),
        ("lastTransitionTime", None),
        ("reason", None),
        ("message", None),
    ],
};

/// `metav1.LabelSelector`.
pub static LABEL_SELECTOR: Shape = Shape {
    fields: &[("matchLabels", None), ("matchExpressions", None)],
};

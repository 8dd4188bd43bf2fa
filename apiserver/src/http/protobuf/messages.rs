//! The k8s-pb messages of the built-in kinds this server decodes, mapped field by field onto
//! k8s-openapi. Listed from k8s-pb's sources (every message reachable from the kinds in
//! `super::decode`); a field added to k8s-pb fails to compile here until it is listed.

use super::convert::{DecodeError, FromPb, messages, optional};

/// Declares the k8s-pb and the k8s-openapi module of each API group/version under one
/// short name, so that a message and its k8s-openapi struct are named alike.
macro_rules! module_pairs {
    ($($name:ident => $($path:ident)::+),* $(,)?) => {
        /// The k8s-pb modules, by short name.
        mod k8s_pb_modules {
            $(pub use k8s_pb::$($path)::+ as $name;)*
        }
        /// The k8s-openapi modules, by the same short names.
        mod k8s_openapi_modules {
            $(pub use k8s_openapi::$($path)::+ as $name;)*
        }
    };
}

module_pairs!(
    apps => api::apps::v1,
    authentication => api::authentication::v1,
    authorization => api::authorization::v1,
    autoscaling => api::autoscaling::v1,
    policy => api::policy::v1,
    rbac => api::rbac::v1,
    batch => api::batch::v1,
    coordination => api::coordination::v1,
    core => api::core::v1,
    events => api::events::v1,
    meta => apimachinery::pkg::apis::meta::v1,
);

messages! {
    core Namespace { metadata, spec, status };
    core ConfigMap { metadata, immutable: ptr, data, binary_data };
    core Secret { metadata, immutable: ptr, data, string_data, r#type => type_ };
    core ServiceAccount { metadata, secrets, image_pull_secrets, automount_service_account_token: ptr };
    core Service { metadata, spec, status };
    core Pod { metadata, spec, status };
    core Event { metadata, involved_object, reason, message, source, first_timestamp, last_timestamp, count, r#type => type_, event_time, series, action, related, reporting_component, reporting_instance };
    core NamespaceSpec { finalizers };
    core NamespaceStatus { phase, conditions };
    core ObjectReference { kind, namespace, name, uid, api_version, resource_version, field_path };
    core LocalObjectReference { name };
    core ServiceSpec { ports, selector, cluster_ip, cluster_ips, r#type => type_, external_ips, session_affinity, load_balancer_ip, load_balancer_source_ranges, external_name, external_traffic_policy, health_check_node_port, publish_not_ready_addresses, session_affinity_config, ip_families, ip_family_policy: ptr, allocate_load_balancer_node_ports: ptr, load_balancer_class: ptr, internal_traffic_policy: ptr, traffic_distribution: ptr };
    core ServiceStatus { load_balancer, conditions };
    core PodSpec { volumes, init_containers, containers, ephemeral_containers, restart_policy, termination_grace_period_seconds: ptr, active_deadline_seconds: ptr, dns_policy, node_selector, service_account_name, service_account, automount_service_account_token: ptr, node_name, host_network, host_pid, host_ipc, share_process_namespace: ptr, security_context, image_pull_secrets, hostname, subdomain, affinity, scheduler_name, tolerations, host_aliases, priority_class_name, priority: ptr, dns_config, readiness_gates, runtime_class_name: ptr, enable_service_links: ptr, preemption_policy: ptr, overhead, topology_spread_constraints, set_hostname_as_fqdn: ptr, os, host_users: ptr, scheduling_gates, resource_claims, resources, hostname_override } - workload_ref;
    core PodStatus { observed_generation, phase, conditions, message, reason, nominated_node_name, host_ip, host_ips, pod_ip, pod_ips, start_time, init_container_statuses, container_statuses, qos_class, ephemeral_container_statuses, resize, resource_claim_statuses, extended_resource_claim_status, allocated_resources, resources };
    core EventSource { component, host };
    core EventSeries { count, last_observed_time };
    core NamespaceCondition { r#type => type_, status, last_transition_time, reason, message };
    core ServicePort { name, protocol, app_protocol, port, target_port, node_port };
    core SessionAffinityConfig { client_ip };
    core LoadBalancerStatus { ingress };
    core Volume { name } + volume_source: VolumeSource { host_path, empty_dir, gce_persistent_disk, aws_elastic_block_store, git_repo, secret, nfs, iscsi, glusterfs, persistent_volume_claim, rbd, flex_volume, cinder, cephfs, flocker, downward_api, fc, azure_file, config_map, vsphere_volume, quobyte, azure_disk, photon_persistent_disk, projected, portworx_volume, scale_io, storageos, csi, ephemeral, image };
    core Container { name, image, command, args, working_dir, ports, env_from, env, resources, resize_policy, restart_policy, restart_policy_rules, volume_mounts, volume_devices, liveness_probe, readiness_probe, startup_probe, lifecycle, termination_message_path, termination_message_policy, image_pull_policy, security_context, stdin, stdin_once, tty };
    core EphemeralContainer { target_container_name } + ephemeral_container_common: EphemeralContainerCommon { name, image, command, args, working_dir, ports, env_from, env, resources, resize_policy, restart_policy, restart_policy_rules, volume_mounts, volume_devices, liveness_probe, readiness_probe, startup_probe, lifecycle, termination_message_path, termination_message_policy, image_pull_policy, security_context, stdin, stdin_once, tty };
    core PodSecurityContext { se_linux_options, windows_options, run_as_user: ptr, run_as_group: ptr, run_as_non_root: ptr, supplemental_groups, supplemental_groups_policy: ptr, fs_group: ptr, sysctls, fs_group_change_policy: ptr, seccomp_profile, app_armor_profile, se_linux_change_policy: ptr };
    core Affinity { node_affinity, pod_affinity, pod_anti_affinity };
    core Toleration { key, operator, value, effect, toleration_seconds: ptr };
    core HostAlias { ip, hostnames };
    core PodDnsConfig => PodDNSConfig { nameservers, searches, options };
    core PodReadinessGate { condition_type };
    core TopologySpreadConstraint { max_skew, topology_key, when_unsatisfiable, label_selector, min_domains, node_affinity_policy, node_taints_policy, match_label_keys };
    core PodOs => PodOS { name };
    core PodSchedulingGate { name };
    core PodResourceClaim { name, resource_claim_name, resource_claim_template_name };
    core ResourceRequirements { limits, requests, claims };
    core PodCondition { r#type => type_, observed_generation, status, last_probe_time, last_transition_time, reason, message };
    core HostIp => HostIP { ip };
    core PodIp => PodIP { ip };
    core ContainerStatus { name, state, last_state, ready, restart_count, image, image_id, container_id, started, allocated_resources, resources, volume_mounts, user, allocated_resources_status, stop_signal };
    core PodResourceClaimStatus { name, resource_claim_name };
    core PodExtendedResourceClaimStatus { request_mappings, resource_claim_name };
    core PodTemplateSpec { metadata, spec };
    core PersistentVolumeClaim { metadata, spec, status };
    core ClientIpConfig => ClientIPConfig { timeout_seconds: ptr };
    core LoadBalancerIngress { ip, hostname, ip_mode, ports };
    core ContainerPort { name, host_port, container_port, protocol, host_ip };
    core EnvFromSource { prefix, config_map_ref, secret_ref };
    core EnvVar { name, value, value_from };
    core ContainerResizePolicy { resource_name, restart_policy };
    core ContainerRestartRule { action, exit_codes };
    core VolumeMount { name, read_only, recursive_read_only, mount_path, sub_path, mount_propagation, sub_path_expr };
    core VolumeDevice { name, device_path };
    core Probe { initial_delay_seconds, timeout_seconds, period_seconds, success_threshold, failure_threshold, termination_grace_period_seconds: ptr } + handler: ProbeHandler { exec, http_get, tcp_socket, grpc };
    core Lifecycle { post_start, pre_stop, stop_signal };
    core SecurityContext { capabilities, privileged: ptr, se_linux_options, windows_options, run_as_user: ptr, run_as_group: ptr, run_as_non_root: ptr, read_only_root_filesystem: ptr, allow_privilege_escalation: ptr, proc_mount: ptr, seccomp_profile, app_armor_profile };
    core SeLinuxOptions => SELinuxOptions { user, role, r#type => type_, level };
    core WindowsSecurityContextOptions { gmsa_credential_spec_name, gmsa_credential_spec, run_as_user_name, host_process };
    core Sysctl { name, value };
    core SeccompProfile { r#type => type_, localhost_profile };
    core AppArmorProfile { r#type => type_, localhost_profile };
    core NodeAffinity { required_during_scheduling_ignored_during_execution, preferred_during_scheduling_ignored_during_execution };
    core PodAffinity { required_during_scheduling_ignored_during_execution, preferred_during_scheduling_ignored_during_execution };
    core PodAntiAffinity { required_during_scheduling_ignored_during_execution, preferred_during_scheduling_ignored_during_execution };
    core PodDnsConfigOption => PodDNSConfigOption { name, value };
    core ResourceClaim { name, request };
    core ContainerState { waiting, running, terminated };
    core VolumeMountStatus { name, mount_path, read_only, recursive_read_only };
    core ContainerUser { linux };
    core ResourceStatus { name, resources };
    core ContainerExtendedResourceRequest { container_name, resource_name, request_name };
    core PersistentVolumeClaimSpec { access_modes, selector, resources, volume_name, storage_class_name, volume_mode, data_source, data_source_ref, volume_attributes_class_name };
    core PersistentVolumeClaimStatus { phase, access_modes, capacity, conditions, allocated_resources, allocated_resource_statuses, current_volume_attributes_class_name, modify_volume_status };
    core PortStatus { port, protocol, error };
    core HostPathVolumeSource { path, r#type => type_ };
    core EmptyDirVolumeSource { medium, size_limit };
    core GcePersistentDiskVolumeSource => GCEPersistentDiskVolumeSource { pd_name, fs_type, partition, read_only };
    core AwsElasticBlockStoreVolumeSource => AWSElasticBlockStoreVolumeSource { volume_id, fs_type, partition, read_only };
    core GitRepoVolumeSource { repository, revision, directory };
    core SecretVolumeSource { secret_name, items, default_mode, optional };
    core NfsVolumeSource => NFSVolumeSource { server, path, read_only };
    core IscsiVolumeSource => ISCSIVolumeSource { target_portal, iqn, lun, iscsi_interface, fs_type, read_only, portals, chap_auth_discovery, chap_auth_session, secret_ref, initiator_name };
    core GlusterfsVolumeSource { endpoints, path, read_only };
    core PersistentVolumeClaimVolumeSource { claim_name, read_only };
    core RbdVolumeSource => RBDVolumeSource { monitors, image, fs_type, pool, user, keyring, secret_ref, read_only };
    core FlexVolumeSource { driver, fs_type, secret_ref, read_only, options };
    core CinderVolumeSource { volume_id, fs_type, read_only, secret_ref };
    core CephFsVolumeSource => CephFSVolumeSource { monitors, path, user, secret_file, secret_ref, read_only };
    core FlockerVolumeSource { dataset_name, dataset_uuid };
    core DownwardAPIVolumeSource { items, default_mode };
    core FcVolumeSource => FCVolumeSource { lun, fs_type, read_only, wwids, target_ww_ns => target_wwns };
    core AzureFileVolumeSource { secret_name, share_name, read_only };
    core ConfigMapVolumeSource { items, default_mode, optional } + local_object_reference: LocalObjectReference { name };
    core VsphereVirtualDiskVolumeSource { volume_path, fs_type, storage_policy_name, storage_policy_id };
    core QuobyteVolumeSource { registry, volume, read_only, user, group, tenant };
    core AzureDiskVolumeSource { disk_name, disk_uri, caching_mode, fs_type, read_only, kind };
    core PhotonPersistentDiskVolumeSource { pd_id, fs_type };
    core ProjectedVolumeSource { sources, default_mode };
    core PortworxVolumeSource { volume_id, fs_type, read_only };
    core ScaleIoVolumeSource => ScaleIOVolumeSource { gateway, system, secret_ref, ssl_enabled, protection_domain, storage_pool, storage_mode, volume_name, fs_type, read_only };
    core StorageOsVolumeSource => StorageOSVolumeSource { volume_name, volume_namespace, fs_type, read_only, secret_ref };
    core CSIVolumeSource { driver, read_only, fs_type, volume_attributes, node_publish_secret_ref };
    core EphemeralVolumeSource { volume_claim_template };
    core ImageVolumeSource { reference, pull_policy };
    core ConfigMapEnvSource { optional } + local_object_reference: LocalObjectReference { name };
    core SecretEnvSource { optional } + local_object_reference: LocalObjectReference { name };
    core EnvVarSource { field_ref, resource_field_ref, config_map_key_ref, secret_key_ref, file_key_ref };
    core ContainerRestartRuleOnExitCodes { operator, values };
    core LifecycleHandler { exec, http_get, tcp_socket, sleep };
    core Capabilities { add, drop };
    core NodeSelector { node_selector_terms };
    core PreferredSchedulingTerm { weight, preference };
    core PodAffinityTerm { label_selector, namespaces, topology_key, namespace_selector, match_label_keys, mismatch_label_keys };
    core WeightedPodAffinityTerm { weight, pod_affinity_term };
    core ContainerStateWaiting { reason, message };
    core ContainerStateRunning { started_at };
    core ContainerStateTerminated { exit_code, signal, reason, message, started_at, finished_at, container_id };
    core LinuxContainerUser { uid, gid, supplemental_groups };
    core ResourceHealth { resource_id, health };
    core VolumeResourceRequirements { limits, requests };
    core TypedLocalObjectReference { api_group, kind, name };
    core TypedObjectReference { api_group, kind, name, namespace };
    core PersistentVolumeClaimCondition { r#type => type_, status, last_probe_time, last_transition_time, reason, message };
    core ModifyVolumeStatus { target_volume_attributes_class_name, status };
    core KeyToPath { key, path, mode };
    core DownwardAPIVolumeFile { path, field_ref, resource_field_ref, mode };
    core VolumeProjection { secret, downward_api, config_map, service_account_token, cluster_trust_bundle, pod_certificate };
    core PersistentVolumeClaimTemplate { metadata, spec };
    core ObjectFieldSelector { api_version, field_path };
    core ResourceFieldSelector { container_name, resource, divisor };
    core ConfigMapKeySelector { key, optional } + local_object_reference: LocalObjectReference { name };
    core SecretKeySelector { key, optional } + local_object_reference: LocalObjectReference { name };
    core FileKeySelector { volume_name, path, key, optional };
    core ExecAction { command };
    core HttpGetAction => HTTPGetAction { path, port, host, scheme, http_headers };
    core TcpSocketAction => TCPSocketAction { port, host };
    core GrpcAction => GRPCAction { port, service };
    core SleepAction { seconds };
    core NodeSelectorTerm { match_expressions, match_fields };
    core SecretProjection { items, optional } + local_object_reference: LocalObjectReference { name };
    core DownwardAPIProjection { items };
    core ConfigMapProjection { items, optional } + local_object_reference: LocalObjectReference { name };
    core ServiceAccountTokenProjection { audience, expiration_seconds, path };
    core ClusterTrustBundleProjection { name, signer_name, label_selector, optional, path };
    core PodCertificateProjection { signer_name, key_type, max_expiration_seconds, credential_bundle_path, key_path, certificate_chain_path, user_annotations };
    core HttpHeader => HTTPHeader { name, value };
    core NodeSelectorRequirement { key, operator, values };
    apps Deployment { metadata, spec, status };
    apps StatefulSet { metadata, spec, status };
    apps DaemonSet { metadata, spec, status };
    apps ReplicaSet { metadata, spec, status };
    apps DeploymentSpec { replicas: ptr, selector, template, strategy, min_ready_seconds, revision_history_limit: ptr, paused, progress_deadline_seconds: ptr };
    apps DeploymentStatus { observed_generation, replicas, updated_replicas, ready_replicas, available_replicas, unavailable_replicas, terminating_replicas, conditions, collision_count };
    apps StatefulSetSpec { replicas: ptr, selector, template, volume_claim_templates, service_name, pod_management_policy, update_strategy, revision_history_limit: ptr, min_ready_seconds, persistent_volume_claim_retention_policy, ordinals };
    apps StatefulSetStatus { observed_generation, replicas, ready_replicas, current_replicas, updated_replicas, current_revision, update_revision, collision_count, conditions, available_replicas };
    apps DaemonSetSpec { selector, template, update_strategy, min_ready_seconds, revision_history_limit: ptr };
    apps DaemonSetStatus { current_number_scheduled, number_misscheduled, desired_number_scheduled, number_ready, observed_generation, updated_number_scheduled, number_available, number_unavailable, collision_count, conditions };
    apps ReplicaSetSpec { replicas: ptr, min_ready_seconds, selector, template };
    apps ReplicaSetStatus { replicas, fully_labeled_replicas, ready_replicas, available_replicas, terminating_replicas, observed_generation, conditions };
    apps DeploymentStrategy { r#type => type_, rolling_update };
    apps DeploymentCondition { r#type => type_, status, last_update_time, last_transition_time, reason, message };
    apps StatefulSetUpdateStrategy { r#type => type_, rolling_update };
    apps StatefulSetPersistentVolumeClaimRetentionPolicy { when_deleted, when_scaled };
    apps StatefulSetOrdinals { start };
    apps StatefulSetCondition { r#type => type_, status, last_transition_time, reason, message };
    apps DaemonSetUpdateStrategy { r#type => type_, rolling_update };
    apps DaemonSetCondition { r#type => type_, status, last_transition_time, reason, message };
    apps ReplicaSetCondition { r#type => type_, status, last_transition_time, reason, message };
    apps RollingUpdateDeployment { max_unavailable, max_surge };
    apps RollingUpdateStatefulSetStrategy { partition: ptr, max_unavailable };
    apps RollingUpdateDaemonSet { max_unavailable, max_surge };
    batch Job { metadata, spec, status };
    batch CronJob { metadata, spec, status };
    batch JobSpec { parallelism: ptr, completions: ptr, active_deadline_seconds: ptr, pod_failure_policy, success_policy, backoff_limit: ptr, backoff_limit_per_index: ptr, max_failed_indexes: ptr, selector, manual_selector: ptr, template, ttl_seconds_after_finished: ptr, completion_mode: ptr, suspend: ptr, pod_replacement_policy: ptr, managed_by: ptr };
    batch JobStatus { conditions, start_time, completion_time, active, succeeded, failed, terminating, completed_indexes, failed_indexes, uncounted_terminated_pods, ready };
    batch CronJobSpec { schedule, time_zone: ptr, starting_deadline_seconds: ptr, concurrency_policy, suspend: ptr, job_template, successful_jobs_history_limit: ptr, failed_jobs_history_limit: ptr };
    batch CronJobStatus { active, last_schedule_time, last_successful_time };
    batch PodFailurePolicy { rules };
    batch SuccessPolicy { rules };
    batch JobCondition { r#type => type_, status, last_probe_time, last_transition_time, reason, message };
    batch UncountedTerminatedPods { succeeded, failed };
    batch JobTemplateSpec { metadata, spec };
    batch PodFailurePolicyRule { action, on_exit_codes, on_pod_conditions };
    batch SuccessPolicyRule { succeeded_indexes, succeeded_count };
    batch PodFailurePolicyOnExitCodesRequirement { container_name, operator, values };
    batch PodFailurePolicyOnPodConditionsPattern { r#type => type_, status };
    coordination Lease { metadata, spec };
    coordination LeaseSpec { holder_identity: ptr, lease_duration_seconds: ptr, acquire_time, renew_time, lease_transitions: ptr, strategy: ptr, preferred_holder: ptr };
    events Event { metadata, event_time, series, reporting_controller, reporting_instance, action, reason, regarding, related, note, r#type => type_, deprecated_source, deprecated_first_timestamp, deprecated_last_timestamp, deprecated_count };
    meta ObjectMeta { name, generate_name, namespace, self_link, uid, resource_version, generation, creation_timestamp, deletion_timestamp, deletion_grace_period_seconds, labels, annotations, owner_references, finalizers, managed_fields };
    meta OwnerReference { api_version, kind, name, uid, controller, block_owner_deletion };
    meta ManagedFieldsEntry { manager, operation, api_version, time, fields_type, fields_v1, subresource };
    meta LabelSelector { match_labels, match_expressions };
    meta LabelSelectorRequirement { key, operator, values };
    meta DeleteOptions { grace_period_seconds: ptr, preconditions, orphan_dependents: ptr, propagation_policy: ptr, dry_run, ignore_store_read_error_with_cluster_breaking_potential: ptr };
    meta Preconditions { uid: ptr, resource_version: ptr };
    meta FieldSelectorRequirement { key, operator, values };
    core Binding { metadata, target };
    policy Eviction { metadata, delete_options };
    authentication TokenRequest { metadata, spec, status };
    authentication TokenRequestSpec { audiences, expiration_seconds: ptr, bound_object_ref };
    authentication BoundObjectReference { kind, api_version, name, u_id => uid };
    authentication TokenReview { metadata, spec, status };
    authentication TokenReviewSpec { token, audiences };
    authentication TokenReviewStatus { authenticated, user, audiences, error };
    authentication UserInfo { username, uid, groups, extra };
    authentication SelfSubjectReview { metadata, status };
    authentication SelfSubjectReviewStatus { user_info };
    authorization SelfSubjectAccessReview { metadata, spec, status };
    rbac Role { metadata, rules };
    rbac ClusterRole { metadata, rules, aggregation_rule };
    rbac RoleBinding { metadata, subjects, role_ref };
    rbac ClusterRoleBinding { metadata, subjects, role_ref };
    rbac PolicyRule { verbs, api_groups, resources, resource_names, non_resource_ur_ls => non_resource_urls };
    rbac AggregationRule { cluster_role_selectors };
    rbac Subject { kind, api_group, name, namespace };
    rbac RoleRef { api_group, kind, name };
    authorization SelfSubjectAccessReviewSpec { resource_attributes, non_resource_attributes };
    authorization SubjectAccessReview { metadata, spec, status };
    authorization LocalSubjectAccessReview { metadata, spec, status };
    authorization SubjectAccessReviewSpec { resource_attributes, non_resource_attributes, user, groups, extra, uid };
    authorization SubjectAccessReviewStatus { allowed, denied, reason, evaluation_error };
    authorization ResourceAttributes { namespace, verb, group, version, resource, subresource, name, field_selector, label_selector };
    authorization FieldSelectorAttributes { raw_selector, requirements };
    authorization LabelSelectorAttributes { raw_selector, requirements };
    authorization NonResourceAttributes { path, verb };
    authorization SelfSubjectRulesReview { metadata, spec, status };
    authorization SelfSubjectRulesReviewSpec { namespace };
    authorization SubjectRulesReviewStatus { resource_rules, non_resource_rules, incomplete, evaluation_error };
    authorization ResourceRule { verbs, api_groups, resources, resource_names };
    authorization NonResourceRule { verbs, non_resource_ur_ls => non_resource_urls };
    autoscaling HorizontalPodAutoscaler { metadata, spec, status };
    autoscaling HorizontalPodAutoscalerSpec { scale_target_ref, min_replicas: ptr, max_replicas, target_cpu_utilization_percentage: ptr };
    autoscaling CrossVersionObjectReference { kind, name, api_version };
    autoscaling HorizontalPodAutoscalerStatus { observed_generation: ptr, last_scale_time, current_replicas, desired_replicas, current_cpu_utilization_percentage: ptr };
}

/// The values of one `extra` key of a user (authentication and authorization each have
/// their own `ExtraValue` message): a list of strings in JSON.
macro_rules! extra_values {
    ($($module:ident),*) => {$(
        impl FromPb<Option<k8s_pb_modules::$module::ExtraValue>> for Vec<String> {
            fn from_pb(
                value: Option<k8s_pb_modules::$module::ExtraValue>,
            ) -> Result<Self, DecodeError> {
                Ok(value.map(|v| v.items).unwrap_or_default())
            }
        }
    )*};
}

extra_values!(authentication, authorization);

impl FromPb<Option<k8s_pb_modules::authentication::TokenRequestStatus>>
    for k8s_openapi_modules::authentication::TokenRequestStatus
{
    fn from_pb(
        value: Option<k8s_pb_modules::authentication::TokenRequestStatus>,
    ) -> Result<Self, DecodeError> {
        let k8s_pb_modules::authentication::TokenRequestStatus {
            token,
            expiration_timestamp,
        } = value.unwrap_or_default();
        Ok(Self {
            token: FromPb::from_pb(token)?,
            expiration_timestamp: FromPb::from_pb(expiration_timestamp)?,
        })
    }
}

// These two have a required time, so no `Default` to start from: they are built whole.

impl FromPb<Option<k8s_pb_modules::events::EventSeries>>
    for k8s_openapi_modules::events::EventSeries
{
    fn from_pb(value: Option<k8s_pb_modules::events::EventSeries>) -> Result<Self, DecodeError> {
        let k8s_pb_modules::events::EventSeries {
            count,
            last_observed_time,
        } = value.unwrap_or_default();
        Ok(Self {
            count: FromPb::from_pb(count)?,
            last_observed_time: FromPb::from_pb(last_observed_time)?,
        })
    }
}

impl FromPb<Option<k8s_pb_modules::meta::Condition>> for k8s_openapi_modules::meta::Condition {
    fn from_pb(value: Option<k8s_pb_modules::meta::Condition>) -> Result<Self, DecodeError> {
        let k8s_pb_modules::meta::Condition {
            r#type,
            status,
            observed_generation,
            last_transition_time,
            reason,
            message,
        } = value.unwrap_or_default();
        Ok(Self {
            type_: FromPb::from_pb(r#type)?,
            status: FromPb::from_pb(status)?,
            observed_generation: FromPb::from_pb(observed_generation)?,
            last_transition_time: FromPb::from_pb(last_transition_time)?,
            reason: FromPb::from_pb(reason)?,
            message: FromPb::from_pb(message)?,
        })
    }
}

optional!(
    k8s_pb_modules::authentication::TokenRequestStatus => k8s_openapi_modules::authentication::TokenRequestStatus,
    k8s_pb_modules::events::EventSeries => k8s_openapi_modules::events::EventSeries,
    k8s_pb_modules::meta::Condition => k8s_openapi_modules::meta::Condition,
);

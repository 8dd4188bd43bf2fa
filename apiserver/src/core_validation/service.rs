//! Services as kube's `ValidateService` and `ValidateServiceUpdate` check them: ports
//! (required, in range, named when there are several, unique names and node ports, known
//! protocols, target ports by number or IANA name), the type, ExternalName's name, headless
//! NodePort and LoadBalancer services, session affinity, node ports on a ClusterIP service,
//! and a cluster IP that may not change. A field kube defaults before validating (type,
//! protocol, sessionAffinity, targetPort) counts as its default when absent.

use std::collections::HashSet;

use serde_json::Value;

use crate::error::Cause;
use crate::validation;

const TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const AFFINITIES: [&str; 2] = ["ClientIP", "None"];

/// The problems of a Service (`old`: the stored one, on an update), in kube's order.
pub(super) fn causes(service: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = &service["spec"];
    let text = |field: &str, default: &'static str| -> String {
        spec[field].as_str().unwrap_or(default).to_string()
    };
    let (service_type, cluster_ip) = (text("type", "ClusterIP"), text("clusterIP", ""));
    let headless = cluster_ip == "None";
    let ports: &[Value] = spec["ports"].as_array().map_or(&[], Vec::as_slice);
    let mut causes = Vec::new();
    if let Some(old) = old {
        causes.extend(cluster_ip_change(old, spec));
    }
    if ports.is_empty() && !headless && service_type != "ExternalName" {
        causes.push(Cause::required("spec.ports", ""));
    }
    match service_type.as_str() {
        "LoadBalancer" | "NodePort" if headless => causes.push(Cause::invalid(
            "spec.clusterIPs[0]",
            &Value::from("None"),
            &format!("may not be set to 'None' for {service_type} services"),
        )),
        "ExternalName" => {
            let name = text("externalName", "");
            let name = name.trim_end_matches('.');
            if name.is_empty() {
                causes.push(Cause::required("spec.externalName", ""));
            }
            for problem in validation::dns1123_subdomain(name)
                .iter()
                .filter(|_| !name.is_empty())
            {
                causes.push(Cause::invalid(
                    "spec.externalName",
                    &Value::from(name),
                    problem,
                ));
            }
        }
        _ => {}
    }
    let mut names = HashSet::new();
    for (index, port) in ports.iter().enumerate() {
        port_causes(
            port,
            &format!("spec.ports[{index}]"),
            ports.len() > 1,
            &mut names,
            &mut causes,
        );
    }
    let affinity = text("sessionAffinity", "None");
    if !AFFINITIES.contains(&affinity.as_str()) {
        causes.push(Cause::not_supported(
            "spec.sessionAffinity",
            &Value::from(affinity),
            &AFFINITIES,
        ));
    } else if affinity == "None" && !spec["sessionAffinityConfig"].is_null() {
        causes.push(Cause::forbidden(
            "spec.sessionAffinityConfig",
            "must not be set when session affinity is None",
        ));
    }
    if !TYPES.contains(&service_type.as_str()) {
        causes.push(Cause::not_supported(
            "spec.type",
            &Value::from(service_type.clone()),
            &TYPES,
        ));
    }
    if service_type == "ClusterIP" {
        for (index, port) in ports.iter().enumerate() {
            if port["nodePort"].as_i64().is_some_and(|p| p != 0) {
                causes.push(Cause::forbidden(
                    &format!("spec.ports[{index}].nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut node_ports = HashSet::new();
    for (index, port) in ports.iter().enumerate() {
        let Some(node_port) = port["nodePort"].as_i64().filter(|p| *p != 0) else {
            continue;
        };
        let protocol = port["protocol"].as_str().unwrap_or("TCP");
        if !node_ports.insert((protocol, node_port)) {
            let field = format!("spec.ports[{index}].nodePort");
            causes.push(Cause::duplicate(&field, &Value::from(node_port)));
        }
    }
    causes
}

/// One port's problems (`validateServicePort`).
fn port_causes(
    port: &Value,
    at: &str,
    name_required: bool,
    names: &mut HashSet<String>,
    causes: &mut Vec<Cause>,
) {
    let name = port["name"].as_str().unwrap_or_default();
    if name_required && name.is_empty() {
        causes.push(Cause::required(&format!("{at}.name"), ""));
    } else if !name.is_empty() {
        for problem in validation::dns1123_label(name) {
            causes.push(Cause::invalid(
                &format!("{at}.name"),
                &Value::from(name),
                &problem,
            ));
        }
        if !names.insert(name.to_string()) {
            causes.push(Cause::duplicate(&format!("{at}.name"), &Value::from(name)));
        }
    }
    let number = port["port"].as_i64().unwrap_or(0);
    for problem in validation::port_number(number) {
        causes.push(Cause::invalid(
            &format!("{at}.port"),
            &Value::from(number),
            &problem,
        ));
    }
    let protocol = port["protocol"].as_str().unwrap_or("TCP");
    if !PROTOCOLS.contains(&protocol) {
        let field = format!("{at}.protocol");
        causes.push(Cause::not_supported(
            &field,
            &Value::from(protocol),
            &PROTOCOLS,
        ));
    }
    let target = &port["targetPort"];
    let problems = match target {
        Value::Number(n) => validation::port_number(n.as_i64().unwrap_or(0)),
        Value::String(name) if !name.is_empty() => validation::port_name(name),
        // Absent, 0 or "": kube defaults it to the port.
        _ => Vec::new(),
    };
    let problems = if target.as_i64() == Some(0) {
        Vec::new()
    } else {
        problems
    };
    for problem in problems {
        causes.push(Cause::invalid(
            &format!("{at}.targetPort"),
            target,
            &problem,
        ));
    }
}

/// An update may not change the cluster IP (kube compares `clusterIPs`, which it sets from a
/// changed `clusterIP` first); one the update leaves out is kept.
fn cluster_ip_change(old: &Value, spec: &Value) -> Option<Cause> {
    let old_spec = &old["spec"];
    let is_external = |spec: &Value| spec["type"] == "ExternalName";
    if is_external(old_spec) || is_external(spec) {
        return None;
    }
    let old_ip = old_spec["clusterIP"].as_str().filter(|ip| !ip.is_empty())?;
    let new_ip = spec["clusterIP"].as_str().filter(|ip| !ip.is_empty())?;
    if new_ip == old_ip || (old_ip == "None" && new_ip == "None") {
        return None;
    }
    let mut new_ips: Vec<&str> = spec["clusterIPs"]
        .as_array()
        .map(|ips| ips.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if new_ips.first() != Some(&new_ip) {
        new_ips = vec![new_ip];
    }
    let quoted: Vec<String> = new_ips.iter().map(|ip| format!("{ip:?}")).collect();
    Some(Cause::invalid_go(
        "spec.clusterIPs[0]",
        &format!("[]string{{{}}}", quoted.join(", ")),
        "may not change once set",
    ))
}

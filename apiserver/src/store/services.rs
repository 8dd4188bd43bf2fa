//! Service cluster IPs and node ports, allocated as kube-apiserver's default service CIDR
//! (10.96.0.0/12, the first address kept for the `kubernetes` Service) and node-port range
//! (30000-32767) do.

use serde_json::{Value, json};

use super::service_allocations::ServiceAllocations;
use super::state::State;
use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::resources::ResourceInfo;

/// The cluster IP of the `default/kubernetes` Service.
pub const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";

/// Size of 10.96.0.0/12.
const CIDR_SIZE: u32 = 1 << 20;
const CIDR_BASE: u32 = (10 << 24) | (96 << 16);
const NODE_PORTS: std::ops::RangeInclusive<u64> = 30000..=32767;

impl State {
    /// Gives a new Service its cluster IP, IP family fields and node ports; refuses an IP or
    /// node port the Service asks for that another Service holds, as kube-apiserver does.
    pub(super) fn allocate_service(
        &self,
        info: &ResourceInfo,
        service: &mut Value,
    ) -> ApiResult<()> {
        let name = meta::name(service).to_string();
        let held = self.objects.service_allocations();
        let spec = &mut service["spec"];
        if !spec.is_object() || spec["type"] == "ExternalName" {
            return Ok(());
        }
        let mut taken = Vec::new();
        let asked_ip = spec["clusterIP"]
            .as_str()
            .filter(|ip| !ip.is_empty())
            .or_else(|| spec["clusterIPs"][0].as_str());
        match asked_ip {
            Some(ip) if ip != "None" && held.holds_ip(ip) => taken.push(Cause::invalid_go(
                "spec.clusterIPs",
                &format!("[]string{{{ip:?}}}"),
                &format!("failed to allocate IP {ip}: provided IP is already allocated"),
            )),
            Some(ip) => spec["clusterIP"] = json!(ip),
            None => spec["clusterIP"] = json!(free_cluster_ip(held)),
        }
        if !spec["clusterIPs"].is_array() {
            spec["clusterIPs"] = json!([spec["clusterIP"].clone()]);
        }
        if !spec["ipFamilies"].is_array() {
            spec["ipFamilies"] = json!(["IPv4"]);
        }
        if spec["ipFamilyPolicy"].is_null() {
            spec["ipFamilyPolicy"] = json!("SingleStack");
        }
        if matches!(spec["type"].as_str(), Some("NodePort" | "LoadBalancer")) {
            let ports = spec["ports"]
                .as_array_mut()
                .map_or(&mut [][..], |p| &mut p[..]);
            let mut given = Vec::new();
            for (i, port) in ports.iter().enumerate() {
                if let Some(asked) = port["nodePort"].as_u64() {
                    if held.holds_node_port(asked) {
                        taken.push(Cause::invalid(
                            &format!("spec.ports[{i}].nodePort"),
                            &json!(asked),
                            "provided port is already allocated",
                        ));
                    }
                    given.push(asked);
                }
            }
            let mut free = NODE_PORTS.filter(|p| !held.holds_node_port(*p) && !given.contains(p));
            for port in ports.iter_mut().filter(|p| p["nodePort"].is_null()) {
                if let Some(free) = free.next() {
                    port["nodePort"] = json!(free);
                }
            }
        }
        if taken.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(info, &name, taken))
        }
    }

    /// Keeps what was allocated to a Service when an update leaves it out.
    pub(super) fn keep_service_allocation(old: &Value, new: &mut Value) {
        if !new["spec"].is_object() {
            return;
        }
        for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            if new["spec"][field].is_null() && !old["spec"][field].is_null() {
                new["spec"][field] = old["spec"][field].clone();
            }
        }
        let old_ports = old["spec"]["ports"].as_array().cloned().unwrap_or_default();
        if let Some(ports) = new["spec"]["ports"].as_array_mut() {
            for port in ports.iter_mut().filter(|p| p["nodePort"].is_null()) {
                let kept = old_ports
                    .iter()
                    .find(|o| o["port"] == port["port"] && !o["nodePort"].is_null());
                if let Some(kept) = kept {
                    port["nodePort"] = kept["nodePort"].clone();
                }
            }
        }
    }
}

/// A cluster IP of the service range that no Service holds, from a random start (the
/// `kubernetes` Service's if the range is full).
fn free_cluster_ip(held: &ServiceAllocations) -> String {
    let start = rand::random::<u32>() % CIDR_SIZE;
    (0..CIDR_SIZE)
        .map(|i| CIDR_BASE + (start + i) % CIDR_SIZE)
        // Neither the network address nor the `kubernetes` Service's nor the broadcast address.
        .filter(|ip| ip & 0xff != 0 && ip & 0xff != 0xff && ip - CIDR_BASE > 1)
        .map(|ip| std::net::Ipv4Addr::from(ip).to_string())
        .find(|ip| !held.holds_ip(ip))
        .unwrap_or_else(|| KUBERNETES_SERVICE_IP.to_string())
}

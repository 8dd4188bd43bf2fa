//! Service cluster IPs and node ports, allocated as kube-apiserver's default service CIDR
//! (10.96.0.0/12, the first address kept for the `kubernetes` Service) and node-port range
//! (30000-32767) do.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::state::State;
use crate::resources::ResourceKey;

/// The cluster IP of the `default/kubernetes` Service.
pub const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";

/// Size of 10.96.0.0/12.
const CIDR_SIZE: u32 = 1 << 20;
const CIDR_BASE: u32 = (10 << 24) | (96 << 16);
const NODE_PORTS: std::ops::RangeInclusive<u64> = 30000..=32767;

fn services_key() -> ResourceKey {
    ResourceKey {
        group: String::new(),
        plural: "services".into(),
    }
}

impl State {
    /// Gives a new Service its cluster IP, IP family fields and node ports.
    pub(super) fn allocate_service(&self, service: &mut Value) {
        let spec = &mut service["spec"];
        if !spec.is_object() || spec["type"] == "ExternalName" {
            return;
        }
        if spec["clusterIP"].as_str().unwrap_or_default().is_empty() {
            let ip = spec["clusterIPs"][0]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| self.free_cluster_ip());
            spec["clusterIP"] = json!(ip);
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
            let mut used = self.used_node_ports();
            if let Some(ports) = spec["ports"].as_array_mut() {
                for port in ports.iter_mut().filter(|p| p["nodePort"].is_null()) {
                    if let Some(free) = NODE_PORTS.clone().find(|p| !used.contains(p)) {
                        used.insert(free);
                        port["nodePort"] = json!(free);
                    }
                }
            }
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

    fn services(&self) -> impl Iterator<Item = std::sync::Arc<Value>> {
        self.objects.list(&services_key(), None, None)
    }

    fn free_cluster_ip(&self) -> String {
        let used: BTreeSet<String> = self
            .services()
            .filter_map(|s| s["spec"]["clusterIP"].as_str().map(str::to_string))
            .collect();
        let start = rand::random::<u32>() % CIDR_SIZE;
        (0..CIDR_SIZE)
            .map(|i| CIDR_BASE + (start + i) % CIDR_SIZE)
            // Neither the network address nor the `kubernetes` Service's nor the broadcast address.
            .filter(|ip| ip & 0xff != 0 && ip & 0xff != 0xff && ip - CIDR_BASE > 1)
            .map(|ip| std::net::Ipv4Addr::from(ip).to_string())
            .find(|ip| !used.contains(ip))
            .unwrap_or_else(|| KUBERNETES_SERVICE_IP.to_string())
    }

    fn used_node_ports(&self) -> BTreeSet<u64> {
        self.services()
            .flat_map(|s| {
                let ports = s["spec"]["ports"].as_array().cloned().unwrap_or_default();
                ports.into_iter().filter_map(|p| p["nodePort"].as_u64())
            })
            .collect()
    }
}

//! The cluster IPs and node ports the stored Services hold, kept as Services are stored and
//! removed, so that allocating one for a new Service looks it up instead of reading every
//! Service (which made creating N Services take time in the square of N).

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;

use serde_json::Value;

/// How many stored Services hold each cluster IP and node port.
#[derive(Default)]
pub struct ServiceAllocations {
    cluster_ips: HashMap<String, usize>,
    node_ports: HashMap<u64, usize>,
}

impl ServiceAllocations {
    /// Counts what `service` holds.
    pub fn add(&mut self, service: &Value) {
        for ip in cluster_ips(service) {
            *self.cluster_ips.entry(ip.to_string()).or_default() += 1;
        }
        for port in node_ports(service) {
            *self.node_ports.entry(port).or_default() += 1;
        }
    }

    /// Stops counting what `service` holds.
    pub fn remove(&mut self, service: &Value) {
        for ip in cluster_ips(service) {
            release(&mut self.cluster_ips, ip);
        }
        for port in node_ports(service) {
            release(&mut self.node_ports, &port);
        }
    }

    /// Whether a stored Service holds this cluster IP.
    pub fn holds_ip(&self, ip: &str) -> bool {
        self.cluster_ips.contains_key(ip)
    }

    /// Whether a stored Service holds this node port.
    pub fn holds_node_port(&self, port: u64) -> bool {
        self.node_ports.contains_key(&port)
    }
}

/// The cluster IPs of a Service: `spec.clusterIPs`, or `spec.clusterIP` alone; not `None`.
fn cluster_ips(service: &Value) -> Vec<&str> {
    let spec = &service["spec"];
    let listed: Vec<&str> = spec["clusterIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let ips = if listed.is_empty() {
        spec["clusterIP"].as_str().into_iter().collect()
    } else {
        listed
    };
    ips.into_iter()
        .filter(|ip| !ip.is_empty() && *ip != "None")
        .collect()
}

/// The node ports of a Service's ports.
fn node_ports(service: &Value) -> impl Iterator<Item = u64> + '_ {
    service["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|port| port["nodePort"].as_u64())
}

/// Counts one holder of `key` fewer, forgetting it at none.
fn release<K, Q>(counts: &mut HashMap<K, usize>, key: &Q)
where
    K: Borrow<Q> + Hash + Eq,
    Q: Hash + Eq + ?Sized,
{
    if let Some(count) = counts.get_mut(key) {
        *count -= 1;
        if *count == 0 {
            counts.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_a_service_holds_is_held_until_every_holder_is_removed() {
        let mut allocations = ServiceAllocations::default();
        let web = json!({"spec": {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
            "ports": [{"port": 80, "nodePort": 30080}, {"port": 443}]}});
        let headless = json!({"spec": {"clusterIP": "None", "ports": [{"port": 80}]}});
        allocations.add(&web);
        allocations.add(&headless);
        assert!(allocations.holds_ip("10.96.0.10"));
        assert!(!allocations.holds_ip("None"));
        assert!(allocations.holds_node_port(30080));
        // Stored twice (a copy written over itself is removed, then added).
        allocations.add(&web);
        allocations.remove(&web);
        assert!(allocations.holds_ip("10.96.0.10"));
        allocations.remove(&web);
        assert!(!allocations.holds_ip("10.96.0.10"));
        assert!(!allocations.holds_node_port(30080));
    }
}

//! Kubernetes' CEL IP and CIDR libraries: `ip()`, `isIP()`, `cidr()`, `isCIDR()` and their
//! accessors.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cel::common::types::{CelBool, CelInt, CelString};
use cel::{DeclarationError, Env, ExecutionError};

use crate::opaque::opaque_val;

/// An IP address.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Ip(IpAddr);

/// An IP prefix: the address as written and the prefix length.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Cidr {
    ip: IpAddr,
    prefix: u8,
}

opaque_val!(Ip, IP_TYPE, "net.IP");
opaque_val!(Cidr, CIDR_TYPE, "net.CIDR");

/// Registers the IP and CIDR functions on `env`.
pub(crate) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(IP_TYPE.to_owned())?;
    env.add_type(CIDR_TYPE.to_owned())?;
    cel::add_overload!(env, fn ip: (CelString) -> Result<Ip>)?;
    cel::add_overload!(env, fn is_ip: (CelString) -> CelBool, name = "isIP")?;
    cel::add_overload!(env, fn ip_is_canonical: (CelString) -> Result<CelBool>, name = "ip.isCanonical")?;
    cel::add_overload!(env, fn ip_string: (Ip) -> CelString, name = "string", id = "ip_to_string")?;
    cel::add_member_overload!(env, fn family: (Ip) -> CelInt)?;
    cel::add_member_overload!(env, fn is_unspecified: (Ip) -> CelBool)?;
    cel::add_member_overload!(env, fn is_loopback: (Ip) -> CelBool)?;
    cel::add_member_overload!(env, fn is_link_local_multicast: (Ip) -> CelBool)?;
    cel::add_member_overload!(env, fn is_link_local_unicast: (Ip) -> CelBool)?;
    cel::add_member_overload!(env, fn is_global_unicast: (Ip) -> CelBool)?;
    cel::add_overload!(env, fn cidr: (CelString) -> Result<Cidr>)?;
    cel::add_overload!(env, fn is_cidr: (CelString) -> CelBool, name = "isCIDR")?;
    cel::add_overload!(env, fn cidr_string: (Cidr) -> CelString, name = "string", id = "cidr_to_string")?;
    cel::add_member_overload!(env, fn contains_ip: (Cidr, Ip) -> CelBool, name = "containsIP")?;
    cel::add_member_overload!(env, fn contains_ip_string: (Cidr, CelString) -> Result<CelBool>,
        name = "containsIP")?;
    cel::add_member_overload!(env, fn contains_cidr: (Cidr, Cidr) -> CelBool, name = "containsCIDR")?;
    cel::add_member_overload!(env, fn contains_cidr_string: (Cidr, CelString) -> Result<CelBool>,
        name = "containsCIDR")?;
    cel::add_member_overload!(env, fn cidr_ip: (Cidr) -> Ip, name = "ip")?;
    cel::add_member_overload!(env, fn masked: (Cidr) -> Cidr)?;
    cel::add_member_overload!(env, fn prefix_length: (Cidr) -> CelInt)?;
    Ok(())
}

/// Parses an IP address as Kubernetes' `ip()` does (no zones, no IPv4-mapped IPv6).
fn parse_ip(text: &str) -> Result<IpAddr, String> {
    let ip: IpAddr = text
        .parse()
        .map_err(|_| format!("IP Address {text:?} parse error during conversion from string: ParseAddr({text:?}): unable to parse IP"))?;
    if let IpAddr::V6(v6) = ip
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address {text:?} is not allowed"));
    }
    Ok(ip)
}

/// Parses `addr/prefix`.
fn parse_cidr(text: &str) -> Result<Cidr, String> {
    let bad = || {
        format!(
            "network address parse error during conversion from string: netip.ParsePrefix({text:?}): bad prefix"
        )
    };
    let (addr, prefix) = text.split_once('/').ok_or_else(bad)?;
    let ip = parse_ip(addr).map_err(|_| bad())?;
    let prefix: u8 = prefix.parse().map_err(|_| bad())?;
    if prefix > max_prefix(&ip) || prefix.to_string().len() != text.len() - addr.len() - 1 {
        return Err(bad());
    }
    Ok(Cidr { ip, prefix })
}

fn max_prefix(ip: &IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

fn fail(function: &str, message: String) -> ExecutionError {
    ExecutionError::function_error(function, message)
}

fn ip(text: &CelString<'_>) -> Result<Ip, ExecutionError> {
    parse_ip(text.inner()).map(Ip).map_err(|m| fail("ip", m))
}

fn is_ip(text: &CelString<'_>) -> CelBool {
    CelBool::from(parse_ip(text.inner()).is_ok())
}

fn ip_is_canonical(text: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    let ip = parse_ip(text.inner()).map_err(|m| fail("ip.isCanonical", m))?;
    Ok(CelBool::from(ip.to_string() == text.inner()))
}

fn ip_string(this: &Ip) -> CelString<'static> {
    CelString::from(this.0.to_string())
}

fn family(this: &Ip) -> CelInt {
    CelInt::from(if this.0.is_ipv4() { 4 } else { 6 })
}

fn is_unspecified(this: &Ip) -> CelBool {
    CelBool::from(this.0.is_unspecified())
}

fn is_loopback(this: &Ip) -> CelBool {
    CelBool::from(this.0.is_loopback())
}

fn is_link_local_multicast(this: &Ip) -> CelBool {
    CelBool::from(match this.0 {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    })
}

fn is_link_local_unicast(this: &Ip) -> CelBool {
    CelBool::from(match this.0 {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    })
}

fn is_global_unicast(this: &Ip) -> CelBool {
    let ip = this.0;
    let special = ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || is_link_local_unicast(this) == CelBool::from(true)
        || ip == IpAddr::V4(Ipv4Addr::BROADCAST);
    CelBool::from(!special)
}

fn cidr(text: &CelString<'_>) -> Result<Cidr, ExecutionError> {
    parse_cidr(text.inner()).map_err(|m| fail("cidr", m))
}

fn is_cidr(text: &CelString<'_>) -> CelBool {
    CelBool::from(parse_cidr(text.inner()).is_ok())
}

fn cidr_string(this: &Cidr) -> CelString<'static> {
    CelString::from(format!("{}/{}", this.ip, this.prefix))
}

/// `ip` with every bit past `prefix` cleared.
fn mask(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(bits & mask))
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(bits & mask))
        }
    }
}

fn contains(cidr: &Cidr, ip: IpAddr) -> bool {
    ip.is_ipv4() == cidr.ip.is_ipv4() && mask(ip, cidr.prefix) == mask(cidr.ip, cidr.prefix)
}

fn contains_ip(this: &Cidr, ip: &Ip) -> CelBool {
    CelBool::from(contains(this, ip.0))
}

fn contains_ip_string(this: &Cidr, ip: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    let ip = parse_ip(ip.inner()).map_err(|m| fail("containsIP", m))?;
    Ok(CelBool::from(contains(this, ip)))
}

fn contains_cidr(this: &Cidr, other: &Cidr) -> CelBool {
    CelBool::from(other.prefix >= this.prefix && contains(this, other.ip))
}

fn contains_cidr_string(this: &Cidr, other: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    let other = parse_cidr(other.inner()).map_err(|m| fail("containsCIDR", m))?;
    Ok(contains_cidr(this, &other))
}

fn cidr_ip(this: &Cidr) -> Ip {
    Ip(this.ip)
}

fn masked(this: &Cidr) -> Cidr {
    Cidr {
        ip: mask(this.ip, this.prefix),
        prefix: this.prefix,
    }
}

fn prefix_length(this: &Cidr) -> CelInt {
    CelInt::from(i64::from(this.prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_contain_addresses_of_their_family() {
        let net = parse_cidr("10.0.0.0/8").unwrap();
        assert!(contains(&net, "10.1.2.3".parse().unwrap()));
        assert!(!contains(&net, "11.0.0.1".parse().unwrap()));
        assert!(!contains(&net, "::1".parse().unwrap()));
        assert!(parse_cidr("10.0.0.0/33").is_err());
        assert!(parse_cidr("10.0.0.0/08").is_err());
        assert!(parse_cidr("::/0").is_ok());
        assert!(parse_ip("::ffff:1.2.3.4").is_err());
        assert_eq!(
            mask("192.168.1.7".parse().unwrap(), 24).to_string(),
            "192.168.1.0"
        );
    }
}

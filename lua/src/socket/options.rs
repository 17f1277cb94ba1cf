//! `setoption`/`getoption` of TCP and UDP objects: one table of options per
//! protocol, one decoder of Lua values into the bytes `setsockopt` takes, and
//! one encoder back. Options set before a lazily made descriptor exists wait
//! in `Sock::pending`. One option is ours, not the system's: `maxline`, kept
//! in the object.

use std::ffi::{CStr, c_int};
use std::net::{Ipv4Addr, Ipv6Addr};

use super::object::{Kind, MAX_VALUE, PendingOpt, check, ok};
use crate::lua::{Error, Lua, Ret, Type, lua_Integer, shown};
use crate::sys;

/// What an option's value is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum OptType {
    Bool,
    Int,
    /// `{on = boolean, timeout = seconds}`: a `linger`.
    Linger,
    /// An IPv4 address as a string (`"*"`: any): an `in_addr`.
    Ip4,
    /// `{multiaddr = ip, interface = ip}`: an `ip_mreq` (set only).
    Mreq4,
    /// `{multiaddr = ip6, interface = index}`: an `ipv6_mreq` (set only).
    Mreq6,
    /// A network interface's name (`SO_BINDTODEVICE`).
    Device,
    /// The pending error (`SO_ERROR`), as LuaSocket's message or nil (get only).
    Error,
    /// `Sock::maxline`: an integer >= 0 (0: no limit), no system call.
    MaxLine,
}

/// The longest interface name, with its NUL (`IFNAMSIZ`).
const IFNAMSIZ: usize = 16;

/// An option: its name, level, number and type.
pub(super) type Opt = (&'static [u8], c_int, c_int, OptType);

/// The options of TCP objects.
pub(super) const TCP: &[Opt] = &[
    (b"bindtodevice", libc::SOL_SOCKET, libc::SO_BINDTODEVICE, OptType::Device),
    (b"error", libc::SOL_SOCKET, libc::SO_ERROR, OptType::Error),
    (b"keepalive", libc::SOL_SOCKET, libc::SO_KEEPALIVE, OptType::Bool),
    (b"reuseaddr", libc::SOL_SOCKET, libc::SO_REUSEADDR, OptType::Bool),
    (b"reuseport", libc::SOL_SOCKET, libc::SO_REUSEPORT, OptType::Bool),
    (b"linger", libc::SOL_SOCKET, libc::SO_LINGER, OptType::Linger),
    (b"tcp-nodelay", libc::IPPROTO_TCP, libc::TCP_NODELAY, OptType::Bool),
    (b"tcp-keepidle", libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, OptType::Int),
    (b"tcp-keepcnt", libc::IPPROTO_TCP, libc::TCP_KEEPCNT, OptType::Int),
    (b"tcp-keepintvl", libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, OptType::Int),
    (b"tcp-defer-accept", libc::IPPROTO_TCP, libc::TCP_DEFER_ACCEPT, OptType::Int),
    (b"tcp-fastopen", libc::IPPROTO_TCP, libc::TCP_FASTOPEN, OptType::Int),
    (b"tcp-fastopen-connect", libc::IPPROTO_TCP, libc::TCP_FASTOPEN_CONNECT, OptType::Int),
    (b"ipv6-v6only", libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, OptType::Bool),
    (b"recv-buffer-size", libc::SOL_SOCKET, libc::SO_RCVBUF, OptType::Int),
    (b"send-buffer-size", libc::SOL_SOCKET, libc::SO_SNDBUF, OptType::Int),
    (b"maxline", 0, 0, OptType::MaxLine),
];

/// The options of UDP objects (LuaSocket's list).
pub(super) const UDP: &[Opt] = &[
    (b"dontroute", libc::SOL_SOCKET, libc::SO_DONTROUTE, OptType::Bool),
    (b"error", libc::SOL_SOCKET, libc::SO_ERROR, OptType::Error),
    (b"broadcast", libc::SOL_SOCKET, libc::SO_BROADCAST, OptType::Bool),
    (b"reuseaddr", libc::SOL_SOCKET, libc::SO_REUSEADDR, OptType::Bool),
    (b"reuseport", libc::SOL_SOCKET, libc::SO_REUSEPORT, OptType::Bool),
    (b"ip-multicast-if", libc::IPPROTO_IP, libc::IP_MULTICAST_IF, OptType::Ip4),
    (b"ip-multicast-ttl", libc::IPPROTO_IP, libc::IP_MULTICAST_TTL, OptType::Int),
    (b"ip-multicast-loop", libc::IPPROTO_IP, libc::IP_MULTICAST_LOOP, OptType::Bool),
    (b"ip-add-membership", libc::IPPROTO_IP, libc::IP_ADD_MEMBERSHIP, OptType::Mreq4),
    (b"ip-drop-membership", libc::IPPROTO_IP, libc::IP_DROP_MEMBERSHIP, OptType::Mreq4),
    (b"ipv6-unicast-hops", libc::IPPROTO_IPV6, libc::IPV6_UNICAST_HOPS, OptType::Int),
    (b"ipv6-multicast-hops", libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_HOPS, OptType::Int),
    (b"ipv6-multicast-loop", libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_LOOP, OptType::Bool),
    (b"ipv6-add-membership", libc::IPPROTO_IPV6, libc::IPV6_ADD_MEMBERSHIP, OptType::Mreq6),
    (b"ipv6-drop-membership", libc::IPPROTO_IPV6, libc::IPV6_DROP_MEMBERSHIP, OptType::Mreq6),
    (b"ipv6-v6only", libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, OptType::Bool),
    (b"recv-buffer-size", libc::SOL_SOCKET, libc::SO_RCVBUF, OptType::Int),
    (b"send-buffer-size", libc::SOL_SOCKET, libc::SO_SNDBUF, OptType::Int),
];

/// The option of `list` named by argument 2, or the error for an unknown
/// one (or one that cannot be read, for `getoption`).
fn check_option(lua: &Lua, list: &[Opt], get: bool) -> Result<Opt, Error> {
    let name = lua.check_cstr(2)?.to_bytes();
    let settable_only = |ty| matches!(ty, OptType::Mreq4 | OptType::Mreq6);
    let readable_only = |ty| ty == OptType::Error;
    let usable = |ty| if get { !settable_only(ty) } else { !readable_only(ty) };
    match list.iter().find(|o| o.0 == name && usable(o.3)) {
        Some(&o) => Ok(o),
        None => Err(Error::arg_owned(2, format!("unsupported option '{}'", shown(name)))),
    }
}

/// The IPv4 address in the string at `idx` (`"*"`: any), or the error
/// `what` (of argument 3).
fn check_ip4(lua: &Lua, idx: c_int, what: &'static CStr) -> Result<Ipv4Addr, Error> {
    match lua.to_cstr(idx).map(CStr::to_bytes) {
        Some(b"*") => Ok(Ipv4Addr::UNSPECIFIED),
        Some(s) => std::str::from_utf8(s).ok().and_then(|s| s.parse().ok()).ok_or(Error::arg(3, what)),
        None => Err(Error::arg(3, what)),
    }
}

/// `[-0, +0, m]` Pushes field `k` of the table at index 3 (raw) and says
/// its type.
fn field(lua: &Lua, k: &CStr) -> Type {
    lua.get_field(3, k)
}

/// Encodes argument 3 as option type `ty` into `value`; returns its length.
/// Fields of a table are read raw, pushed and popped.
fn encode(lua: &mut Lua, ty: OptType, value: &mut [u8; MAX_VALUE]) -> Result<usize, Error> {
    let top = lua.top();
    let len = encode_pushing(lua, ty, value);
    lua.set_top(top);
    len
}

/// `encode`, leaving the fields it read on the stack.
fn encode_pushing(lua: &Lua, ty: OptType, value: &mut [u8; MAX_VALUE]) -> Result<usize, Error> {
    match ty {
        OptType::Bool => {
            if lua.kind(3) != Type::Boolean {
                return Err(Error::arg(3, c"boolean expected"));
            }
            value[..4].copy_from_slice(&(lua.to_bool(3) as i32).to_ne_bytes());
            Ok(4)
        }
        OptType::Int => {
            let v = i32::try_from(lua.check_int(3)?).map_err(|_| Error::arg(3, c"value out of range"))?;
            value[..4].copy_from_slice(&v.to_ne_bytes());
            Ok(4)
        }
        OptType::Linger => {
            lua.check_type(3, Type::Table)?;
            if field(lua, c"on") != Type::Boolean {
                return Err(Error::arg(3, c"boolean 'on' field expected"));
            }
            let on = lua.to_bool(-1) as i32;
            field(lua, c"timeout");
            if !lua.is_integer(-1) {
                return Err(Error::arg(3, c"integer 'timeout' field expected"));
            }
            let secs = i32::try_from(lua.to_int(-1).unwrap_or_default())
                .map_err(|_| Error::arg(3, c"'timeout' out of range"))?;
            value[..4].copy_from_slice(&on.to_ne_bytes());
            value[4..8].copy_from_slice(&secs.to_ne_bytes());
            Ok(8)
        }
        OptType::Ip4 => {
            value[..4].copy_from_slice(&check_ip4(lua, 3, c"invalid IPv4 address")?.octets());
            Ok(4)
        }
        OptType::Mreq4 => {
            lua.check_type(3, Type::Table)?;
            field(lua, c"multiaddr");
            let group = check_ip4(lua, -1, c"invalid 'multiaddr' ip address")?;
            let iface = match field(lua, c"interface") {
                Type::Nil => Ipv4Addr::UNSPECIFIED,
                _ => check_ip4(lua, -1, c"invalid 'interface' ip address")?,
            };
            value[..4].copy_from_slice(&group.octets());
            value[4..8].copy_from_slice(&iface.octets());
            Ok(8)
        }
        OptType::Mreq6 => {
            lua.check_type(3, Type::Table)?;
            field(lua, c"multiaddr");
            let group = lua
                .to_cstr(-1)
                .and_then(|s| s.to_str().ok())
                .and_then(|s| s.parse::<Ipv6Addr>().ok())
                .ok_or(Error::arg(3, c"invalid 'multiaddr' ip address"))?;
            let iface = match field(lua, c"interface") {
                Type::Nil => 0,
                _ if lua.is_integer(-1) => u32::try_from(lua.to_int(-1).unwrap_or_default())
                    .map_err(|_| Error::arg(3, c"'interface' out of range"))?,
                _ => return Err(Error::arg(3, c"integer 'interface' field expected")),
            };
            value[..16].copy_from_slice(&group.octets());
            value[16..20].copy_from_slice(&iface.to_ne_bytes());
            Ok(20)
        }
        OptType::Device => {
            let name = lua.check_bytes(3)?;
            if name.len() >= IFNAMSIZ {
                return Err(Error::arg(3, c"interface name too long"));
            }
            value[..name.len()].copy_from_slice(name);
            value[name.len()] = 0;
            Ok(name.len() + 1)
        }
        OptType::Error => unreachable!("get only"),
        OptType::MaxLine => unreachable!("not a system option"),
    }
}

/// The `maxline` value, argument 3: an integer >= 0.
fn check_maxline(lua: &Lua) -> Result<usize, Error> {
    usize::try_from(lua.check_int(3)?).map_err(|_| Error::arg(3, c"non-negative integer expected"))
}

/// `obj:setoption(name, value)` for an object of `kinds` with the options
/// `list`.
pub(super) fn set(lua: &mut Lua, kinds: &[Kind], list: &[Opt]) -> Ret {
    check(lua, 1, kinds)?;
    let (_, level, name, ty) = check_option(lua, list, false)?;
    if ty == OptType::MaxLine {
        let max = check_maxline(lua)?;
        let s = check(lua, 1, kinds)?;
        if s.closed.get() {
            return Ok(lua.fail(c"closed"));
        }
        s.maxline.set(max);
        return Ok(ok(lua));
    }
    let mut value = [0u8; MAX_VALUE];
    let len = encode(lua, ty, &mut value)?;
    let s = check(lua, 1, kinds)?;
    if s.closed.get() {
        return Ok(lua.fail(c"closed"));
    }
    if s.fd.get() < 0 {
        let mut pending = s.pending.borrow_mut();
        pending.retain(|o| (o.level, o.name) != (level, name) || ty == OptType::Mreq4 || ty == OptType::Mreq6);
        pending.push(PendingOpt { level, name, value, len });
        drop(pending);
        return Ok(ok(lua));
    }
    match sys::setsockopt(s.fd.get(), level, name, &value[..len]) {
        Ok(()) => Ok(ok(lua)),
        Err(e) => Ok(lua.fail(sys::strerror(e))),
    }
}

/// `obj:getoption(name)` for an object of `kinds` with the options `list`.
pub(super) fn get(lua: &mut Lua, kinds: &[Kind], list: &[Opt]) -> Ret {
    let s = check(lua, 1, kinds)?;
    let (_, level, name, ty) = check_option(lua, list, true)?;
    if ty == OptType::MaxLine && !s.closed.get() {
        lua.push_int(s.maxline.get() as lua_Integer);
        return Ok(1);
    }
    let fd = s.fd.get();
    if fd < 0 {
        return Ok(lua.fail(c"closed"));
    }
    let mut value = [0u8; IFNAMSIZ];
    let want = match ty {
        OptType::Linger => 8,
        OptType::Device => IFNAMSIZ,
        _ => 4,
    };
    let got = match sys::getsockopt(fd, level, name, &mut value[..want]) {
        Ok(n) => n,
        Err(e) => return Ok(lua.fail(sys::strerror(e))),
    };
    let a = i32::from_ne_bytes(value[..4].try_into().expect("4 bytes"));
    match ty {
        OptType::Bool => lua.push_bool(a != 0),
        OptType::Int => lua.push_int(a as lua_Integer),
        OptType::Linger => {
            let b = i32::from_ne_bytes(value[4..8].try_into().expect("4 bytes"));
            lua.new_table(0, 2);
            lua.push_bool(a != 0);
            lua.set_field(-2, c"on");
            lua.push_int(b as lua_Integer);
            lua.set_field(-2, c"timeout");
        }
        OptType::Ip4 => {
            let ip = Ipv4Addr::new(value[0], value[1], value[2], value[3]);
            lua.push_owned(ip.to_string());
        }
        OptType::Device => {
            let got = got.min(IFNAMSIZ);
            let n = value[..got].iter().position(|&b| b == 0).unwrap_or(got);
            lua.push_bytes(&value[..n]);
        }
        OptType::Error => match a {
            0 => lua.push_nil(),
            e => lua.push_bytes(sys::strerror(e).to_bytes()),
        },
        OptType::Mreq4 | OptType::Mreq6 => unreachable!("set only"),
        OptType::MaxLine => unreachable!("answered above"),
    }
    Ok(1)
}
